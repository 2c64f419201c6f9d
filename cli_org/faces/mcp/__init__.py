"""`cli-org mcp`: the Model Context Protocol face (stdio), beside the CLI; see server.py."""
