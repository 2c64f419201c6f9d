"""Database access: the embedded server, connections, migrations and named SQL."""
