"""cli-org: an org memory for teams of AI agents and people, centred on PostgreSQL."""

__version__ = "0.1.0"
