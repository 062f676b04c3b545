"""The PostgreSQL backend the settings name (ENGINE "config.postgresql"): Django's, checking a connection by
its socket."""
