"""Where each harness keeps its sessions and memory files unless told otherwise."""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..local.project import memory_dir


def _env_dir(name: str, default: str) -> Path:
    value = os.environ.get(name)
    return Path(value).expanduser() if value else Path.home() / default


def claude_home() -> Path:
    return _env_dir("CLAUDE_CONFIG_DIR", ".claude")


def hermes_home() -> Path:
    return _env_dir("HERMES_HOME", ".hermes")


def codex_home() -> Path:
    return _env_dir("CODEX_HOME", ".codex")


# Claude Code keeps a project's own memory in projects/<name>/memory/MEMORY.md, <name> being
# the project's absolute path with every character that is not an ASCII letter or digit
# replaced by "-" (the archived sessions of /home/marco/projects/spotter sit under
# projects/-home-marco-projects-spotter; a dot or an underscore becomes "-" too). A name over
# 200 characters is cut and given a hash this code does not reproduce: not found, then.
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")
_NAME_MAX = 200


def claude_project_memory(root: Path) -> Path | None:
    """Where Claude Code keeps the memory index of the project at `root` (it may not exist)."""
    name = _NOT_ALNUM.sub("-", os.path.abspath(root))
    return None if len(name) > _NAME_MAX else claude_home() / "projects" / name / "memory" / "MEMORY.md"


def session_stores() -> dict[str, Path]:
    """The default session store of each harness that exists on this machine."""
    found = {
        "claude-code": claude_home() / "projects",
        "hermes": hermes_home() / "state.db",
        "codex": codex_home() / "sessions",
    }
    return {harness: path for harness, path in found.items() if path.exists()}


def memory_files(root: Path) -> list[Path]:
    """Harness memory files, and the bots' files under the project root (project.py)."""
    found: list[Path] = []
    projects = claude_home() / "projects"
    if projects.is_dir():
        found += sorted(projects.glob("*/memory/**/*.md"))
    found += [p for p in (hermes_home() / "memories" / name for name in ("MEMORY.md", "USER.md")) if p.is_file()]
    found += sorted(memory_dir(root).glob("*.md"))
    return found
