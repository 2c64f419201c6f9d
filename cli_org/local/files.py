"""Reading a file that a user, a checkout or a harness folder hands us: the one way to do it.

Why: a repository can commit `.agents/org/memory/notes.md ->
~/.pgpass`, a session folder can hold a symlink to /etc/shadow, and a path can name a FIFO,
/dev/zero or /proc/self/mem. So a file is read only when it is a regular file, no larger
than a bound, and, when it was found under a `root`, reached from that root without
following any symlink (the root itself is the caller's choice and may be one). It is opened
with O_NOFOLLOW|O_NONBLOCK and judged by fstat on the open descriptor, so nothing swapped in
between a check and the open is read. A file the caller named itself (`import FILE`) may be
a symlink: its name is resolved once and the result opened the same way.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..errors import InputError
from ..text import shown

# A memory file, note, golden set or notebook file larger than this is not one (an export,
# a log, a base64 dump); the largest real note in the TIL vault is ~40 KB.
MAX_FILE_BYTES = 8 << 20
_CHUNK = 1 << 20

_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)
_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a device", stat.S_IFBLK: "a device"}
_KINDS |= {stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a folder", stat.S_IFLNK: "a symlink"}
# Files of these kernel filesystems claim to be regular but are not files (/proc/self/mem).
_PSEUDO = ("/proc", "/sys")


class FileRefused(InputError):
    """A file cli-org will not read; `reason` says why without the name."""

    def __init__(self, path: Path | str, reason: str) -> None:
        super().__init__(f"{shown(str(path))}: {reason}")
        self.path = str(path)
        self.reason = reason


@dataclass
class FileData:
    data: bytes
    stat: os.stat_result  # of the open descriptor: what was actually read


@contextmanager
def open_file(path: Path, *, root: Path | None = None) -> Iterator[tuple[BinaryIO, os.stat_result]]:
    """The file open for reading and its fstat, or FileRefused (see the module's rule)."""
    fd = _open(Path(path), root)
    try:
        st = os.fstat(fd)
        check_stat(path, st)
        fh = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with fh:
        yield fh, st


def read_file(path: Path, *, root: Path | None = None, limit: int = MAX_FILE_BYTES) -> FileData:
    """The whole file (at most `limit` bytes, else FileRefused) and its fstat."""
    parts, total = [], 0
    with open_file(path, root=root) as (fh, st):
        while total <= limit:  # in chunks: a file that grows while read still stops here
            try:
                part = fh.read(min(_CHUNK, limit + 1 - total))
            except OSError as exc:
                raise FileRefused(path, f"cannot read ({exc.strerror or exc})") from None
            if not part:
                break
            parts.append(part)
            total += len(part)
    if total > limit:
        raise FileRefused(path, f"larger than {_size(limit)}; not read")
    return FileData(b"".join(parts), st)


def read_text(path: Path, *, root: Path | None = None, limit: int = MAX_FILE_BYTES) -> str:
    """The file as UTF-8 text, bad bytes replaced: for files that are only searched or shown."""
    return read_file(path, root=root, limit=limit).data.decode("utf-8", errors="replace")


def _open(path: Path, root: Path | None) -> int:
    try:
        if root is None:
            # Named by the caller: its symlinks are the caller's choice, resolved once here.
            real = os.path.realpath(path)
            _peek(path, real, None)
            return os.open(real, _FLAGS)
        rel = Path(os.path.relpath(os.path.abspath(path), os.path.abspath(root)))
        if rel.parts[:1] == ("..",) or rel == Path("."):
            raise FileRefused(path, f"not inside {shown(str(root))}; not read")
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
        try:
            for part in rel.parts[:-1]:
                inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = inner
            _peek(path, rel.parts[-1], fd)
            return os.open(rel.parts[-1], _FLAGS, dir_fd=fd)
        finally:
            os.close(fd)
    except FileRefused:
        raise
    except FileNotFoundError:
        raise FileRefused(path, "cannot read (does not exist)") from None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise FileRefused(path, "reached through a symlink; not followed") from None
        if exc.errno == errno.ENXIO:
            raise FileRefused(path, "not a regular file (a socket); not read") from None
        raise FileRefused(path, f"cannot read ({exc.strerror or exc})") from None


def lstat_under(root: Path | str, rel: str) -> os.stat_result | None:
    """What `rel` (a path a fact or a memory line cites) is under `root`, found without
    following a symlink or leaving the root: its lstat, or None when nothing is there.
    FileRefused when `rel` is absolute, climbs out with `..` or passes through a symlink: what
    an untrusted checkout or claim names must not tell of files outside the checkout."""
    parts = Path(rel).parts
    if not parts or Path(rel).is_absolute() or ".." in parts:
        raise FileRefused(Path(rel), f"not inside {shown(str(root))}; not looked at")
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        for part in parts[:-1]:
            inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = inner
        st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise FileRefused(Path(rel), "reached through a symlink; not followed") from None
        return None
    finally:
        os.close(fd)
    if stat.S_ISLNK(st.st_mode):
        raise FileRefused(Path(rel), "a symlink; not followed")
    return st


def _peek(path: Path, name: str, dir_fd: int | None) -> None:
    """Refuse a special file before opening it (opening a device can act); the fstat after
    the open is the check that counts."""
    check_stat(path, os.stat(name, dir_fd=dir_fd, follow_symlinks=False))


def check_stat(path: Path | str, st: os.stat_result) -> None:
    """FileRefused unless `st` is a regular file's (the rule of this module)."""
    if stat.S_ISLNK(st.st_mode):
        raise FileRefused(path, "a symlink; not followed")
    if not stat.S_ISREG(st.st_mode):
        raise FileRefused(path, f"not a regular file ({_KINDS.get(stat.S_IFMT(st.st_mode), 'special')}); not read")
    if st.st_dev in _pseudo_devices():
        raise FileRefused(path, "a kernel file, not a regular file; not read")


def check_target(path: Path | str) -> None:
    """The rule for every file cli-org writes where a user names it (`export --out`,
    `db backup`, `eval history --png`; setup's files keep their own, stricter one): a target
    that exists must be a regular file, reached without a symlink. A device, a FIFO, a socket,
    a folder or a symlink (to anything) is FileRefused, and nothing is written: a rename over
    `/dev/zero` made it a file holding the export, and opening a FIFO to write blocks forever."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise FileRefused(path, f"cannot be written ({exc.strerror or exc}); nothing was written") from None
    if stat.S_ISLNK(st.st_mode):
        raise FileRefused(path, "a symlink; not written through; nothing was written")
    if stat.S_ISDIR(st.st_mode):
        raise FileRefused(path, "a folder; name a file; nothing was written")
    if not stat.S_ISREG(st.st_mode):
        kind = _KINDS.get(stat.S_IFMT(st.st_mode), "special")
        raise FileRefused(path, f"not a regular file ({kind}); nothing was written")
    # Another user's file is not replaced: a rename as root put a 0600 file of root's in its
    # place (the owner lost it), and a file someone else planted is not ours to overwrite.
    if st.st_uid != os.geteuid():
        raise FileRefused(path, "owned by another user; not replaced; nothing was written")


@contextmanager
def private_temporary(path: Path) -> Iterator[Path]:
    """A new empty file only its owner may read (0600), made with O_EXCL|O_NOFOLLOW beside
    `path`, for the caller (or a tool it runs) to fill; when the block ends well it is synced
    and renamed over `path`, the target rule (check_target) checked before and again just
    before the rename; on any failure it is removed and `path` is untouched."""
    path = Path(path)
    folder = path.parent
    if not folder.is_dir():
        raise InputError(f"folder {shown(str(folder))} does not exist; nothing was written")
    check_target(path)
    try:
        fd, name = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")  # 0600, O_EXCL|O_NOFOLLOW
    except OSError as exc:
        raise FileRefused(path, f"cannot be written ({exc.strerror or exc})") from None
    os.close(fd)
    temp = Path(name)
    try:
        yield temp
        try:
            fd = os.open(temp, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise FileRefused(path, "its temporary file was replaced; nothing was written")
                os.fsync(fd)
            finally:
                os.close(fd)
            check_target(path)  # again: something may have been put there meanwhile
            os.replace(temp, path)
        except OSError as exc:
            raise FileRefused(path, f"cannot be written ({exc.strerror or exc})") from None
    finally:
        if os.path.lexists(temp):
            os.unlink(temp)


def write_private(path: Path, data: bytes) -> None:
    """Write a file only its owner may read (mode 0600), atomically, under the target rule
    (check_target): a temp file created with O_EXCL|O_NOFOLLOW in the same folder, then
    renamed over `path`. An export holds every notebook; it is never written through a
    symlink, into a device or a FIFO, nor half-written."""
    with private_temporary(Path(path)) as temp:
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            raise FileRefused(path, f"cannot be written ({exc.strerror or exc})") from None
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
        except OSError as exc:
            raise FileRefused(path, f"cannot be written ({exc.strerror or exc}); nothing was written") from None


_pseudo: set[int] | None = None


def _pseudo_devices() -> set[int]:
    global _pseudo
    if _pseudo is None:
        _pseudo = set()
        for mount in _PSEUDO:
            with suppress(OSError):
                _pseudo.add(os.stat(mount).st_dev)
    return _pseudo


def _size(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit} bytes"
