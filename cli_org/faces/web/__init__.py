"""The web face: `cli-org serve` (README "Web page")."""
