"""Folders only their owner can enter: where a socket that trusts whoever reaches it may live.

The embedded server's socket folder and the warm helper's socket folder are both made and
checked here. Standard library only: the warm client calls it before anything heavy loads.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path


def private_folder(path: Path, uid: int | None = None, chown_to: str | None = None) -> str | None:
    """Make `path` (mode 0700, owned by `uid`, default: this process's user) or check the one
    there; None when it is private, else what is wrong with it. A folder someone else made,
    a symlink, or one that others may enter is never used: whoever can reach a socket in it
    could talk to what listens there."""
    uid = os.geteuid() if uid is None else uid
    try:
        path.mkdir(mode=0o700)
        path.chmod(0o700)  # whatever the umask
        if chown_to:
            shutil.chown(path, chown_to, chown_to)
    except FileExistsError:
        pass
    except OSError as exc:
        return f"cannot be made ({exc.strerror})"
    st = path.lstat()
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or st.st_mode & 0o077:
        return f"mode {stat.S_IMODE(st.st_mode):o}, owner uid {st.st_uid}"
    return None
