"""The PostgreSQL backend the settings name (ENGINE "config.postgresql"): Django's, with a cheaper pool check."""
