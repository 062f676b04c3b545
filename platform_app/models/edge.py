"""The edge: firewall rules and events, web analytics events and rollups."""
