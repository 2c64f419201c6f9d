"""Where cli-org keeps things on this machine. Standard library only: the warm client
(cli_org/faces/warm/client.py) reads it before anything else loads."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def data_dir_from(env: Mapping[str, str]) -> Path:
    """CLI_ORG_DATA_DIR, else $XDG_DATA_HOME/cli-org, else ~/.local/share/cli-org."""
    if env.get("CLI_ORG_DATA_DIR"):
        return Path(env["CLI_ORG_DATA_DIR"]).expanduser()
    base = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "cli-org"
