"""Custom domains of projects and their DNS checks."""
