"""The web face: `cli-org serve` (docs/web.md)."""
