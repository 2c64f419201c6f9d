"""The project root: the one place that decides which folder holds .agents/org/memory/.

Recall reads the bots' memory files from here and `archive memory` captures them from
here, so both see the same files from any subfolder.
"""

from __future__ import annotations

from pathlib import Path

MEMORY_DIR = Path(".agents") / "org" / "memory"


def project_root(explicit: str | None = None, cwd: Path | None = None) -> Path:
    """ORG_ROOT, else the enclosing git work tree, else the current folder."""
    if explicit:
        return Path(explicit).expanduser()
    here = (cwd or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return here


def memory_dir(root: Path) -> Path:
    """The bots' memory folder under a project root."""
    return root / MEMORY_DIR
