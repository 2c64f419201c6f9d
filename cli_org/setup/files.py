"""The files `cli-org setup` reads and writes, reached without following a link that a
checkout planted.

The rule: never write or read-for-edit through a path an untrusted
checkout controls. Each file is a `Place`: a trusted folder and the names below it.
- In a project, the trusted folder is the project folder the user named; every name below
  it (folders, the file, its temporary file) is opened with O_NOFOLLOW, one
  folder at a time, so a symbolic link anywhere is refused.
- In the user's own home, a file may be the user's link into a dotfiles folder: it is
  resolved first and the folder it lies in is the trusted one; the temporary name beside
  it is still never followed.
Everywhere: the file must be a regular file with one link, owned by the user who runs setup
(a file someone else owns, in a checkout or a shared folder, is theirs: replacing it would
take it from them, and setup's own record must be one only you could have written); a temporary name that
exists already is refused (it is made with O_CREAT|O_EXCL|O_NOFOLLOW, never reused); the
new text is renamed over the file within its folder.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError

# A configuration file setup edits is a few KB; ~/.claude.json, which Claude Code grows
# with its project history, reaches a few MB. Anything larger is not read.
MAX_BYTES = 64 * 1024 * 1024
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
AFTER = "move it away, then run again (nothing was changed)"


@dataclass(frozen=True)
class Place:
    root: Path  # trusted: opened as it is
    folders: tuple[str, ...]  # below root, each opened without following a link
    name: str

    @property
    def path(self) -> Path:
        return self.root.joinpath(*self.folders, self.name)

    def beside(self, name: str) -> Place:
        return Place(self.root, self.folders, name)

    @property
    def temporary(self) -> Place:
        return self.beside(f".{self.name}.cli-org-tmp")


def place(path: Path, project_dir: Path | None) -> Place:
    """Where `path` lies: below the project folder (trusted as named), else in the user's
    home (its links resolved, down to the deepest folder that exists)."""
    if project_dir is not None:
        try:
            parts = path.relative_to(project_dir).parts
        except ValueError:
            parts = ()
        if parts:
            return Place(Path(os.path.realpath(project_dir)), parts[:-1], parts[-1])
    real = Path(os.path.realpath(path))
    root = real.parent
    while not root.is_dir() and root != root.parent:
        root = root.parent
    rest = real.relative_to(root).parts
    return Place(root, rest[:-1], rest[-1])


def _refused(path: Path, exc: OSError, folder: int) -> ConfigError:
    """Why `path` (`path.name` in the open `folder`) could not be opened. O_NOFOLLOW with
    O_DIRECTORY on a link fails with ENOTDIR, so a link is told apart by looking at it."""
    with contextlib.suppress(OSError):
        if stat.S_ISLNK(os.stat(path.name, dir_fd=folder, follow_symlinks=False).st_mode):
            return ConfigError(f"{path} is a symbolic link; setup does not write through links; {AFTER}")
    if exc.errno == errno.ELOOP:
        return ConfigError(f"{path} is a symbolic link; setup does not write through links; {AFTER}")
    if exc.errno == errno.ENOTDIR:
        return ConfigError(f"{path} is not a folder; {AFTER}")
    return ConfigError(f"{path}: cannot be opened ({exc.strerror}); nothing was changed")


def _check(path: Path, info: os.stat_result) -> None:
    if stat.S_ISLNK(info.st_mode):
        raise ConfigError(f"{path} is a symbolic link; setup does not write through links; {AFTER}")
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(f"{path} is not a regular file; {AFTER}")
    if info.st_nlink != 1:
        raise ConfigError(f"{path} has {info.st_nlink} hard links; setup edits only a file with one; {AFTER}")
    if info.st_uid != os.geteuid():
        owner = f"owned by another user (uid {info.st_uid})"
        raise ConfigError(f"{path} is {owner}; setup edits only your own files; {AFTER}")


def _folder(where: Place, *, create: bool) -> int | None:
    """An open descriptor of the folder `where` lies in, walked from its root without
    following a link; None when a folder is missing (and not `create`)."""
    fd = os.open(where.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    walked = where.root
    try:
        for name in where.folders:
            walked = walked / name
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, dir_fd=fd)
            try:
                inner = os.open(name, _FOLDER, dir_fd=fd)
            except FileNotFoundError:
                os.close(fd)
                return None
            except OSError as exc:
                raise _refused(walked, exc, fd) from None
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def read(where: Place) -> bytes | None:
    """The file's bytes, or None when it does not exist; a link, anything but a regular
    file, a file with several links or one over MAX_BYTES is refused."""
    folder = _folder(where, create=False)
    if folder is None:
        return None
    try:
        try:
            fd = os.open(where.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise _refused(where.path, exc, folder) from None
        try:
            info = os.fstat(fd)
            _check(where.path, info)
            if info.st_size > MAX_BYTES:
                raise ConfigError(f"{where.path} is larger than {MAX_BYTES // 2**20} MB; nothing was changed")
            chunks = []
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)
    finally:
        os.close(folder)


def _lstat(where: Place) -> os.stat_result | None:
    """What lies at the name, a link included, without following it; None when nothing."""
    folder = _folder(where, create=False)
    if folder is None:
        return None
    try:
        return os.stat(where.name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return None
    finally:
        os.close(folder)


def must_be_free(where: Place) -> None:
    """Refuse a temporary name that exists already: setup makes it afresh."""
    info = _lstat(where)
    if info is not None and stat.S_ISLNK(info.st_mode):
        raise ConfigError(f"{where.path} is a symbolic link; setup does not write through links; {AFTER}")
    if info is not None:
        raise ConfigError(f"{where.path} exists already; setup makes that file itself; {AFTER}")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def replace(where: Place, data: bytes, mode: int = 0o666) -> None:
    """Write the file through a new temporary file beside it, renamed over it; the file's
    mode is kept (a new file gets `mode`, less the umask)."""
    folder = _folder(where, create=True)
    assert folder is not None
    temporary = where.temporary.name
    try:
        try:
            info = os.stat(where.name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            info = None
        if info is not None:
            _check(where.path, info)
        try:
            fd = os.open(temporary, _NEW, mode if info is None else 0o600, dir_fd=folder)
        except FileExistsError:
            raise ConfigError(f"{where.temporary.path} exists already; setup makes that file itself; {AFTER}") from None
        try:
            try:
                _write_all(fd, data)
                if info is not None:
                    os.fchmod(fd, stat.S_IMODE(info.st_mode))
            finally:
                os.close(fd)
            os.replace(temporary, where.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=folder)
            raise
    finally:
        os.close(folder)


def delete(where: Place) -> None:
    folder = _folder(where, create=False)
    if folder is None:
        return
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(where.name, dir_fd=folder)
    finally:
        os.close(folder)


def remove_empty_folder(path: Path) -> None:
    """Take away a folder setup made, when it is empty (never through a link)."""
    where = Place(Path(os.path.realpath(path.parent)), (), path.name)
    folder = _folder(where, create=False)
    if folder is None:
        return
    try:
        with contextlib.suppress(OSError):  # not empty, gone, or a link
            os.rmdir(where.name, dir_fd=folder)
    finally:
        os.close(folder)


@contextlib.contextmanager
def locked(where: Place) -> Iterator[None]:
    """Hold an exclusive lock on the file (made if missing, mode 0600) until the block ends,
    then take the file away again (nothing of setup's stays in the data folder but its
    record); the same rules as any file setup opens: no link, a regular file with one link,
    yours. A lock won on a file another holder took away meanwhile is tried again on the
    new one, so two holders never hold two files of one name."""
    while True:
        folder = _folder(where, create=True)
        assert folder is not None
        try:
            flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
            try:
                fd = os.open(where.name, flags, 0o600, dir_fd=folder)
            except OSError as exc:
                raise _refused(where.path, exc, folder) from None
            try:
                opened = os.fstat(fd)
                _check(where.path, opened)
                fcntl.flock(fd, fcntl.LOCK_EX)
                try:
                    now = os.stat(where.name, dir_fd=folder, follow_symlinks=False)
                except FileNotFoundError:
                    now = None
                if now is None or (now.st_dev, now.st_ino) != (opened.st_dev, opened.st_ino):
                    continue  # taken away (or replaced) while we waited: lock the one there now
                try:
                    yield
                finally:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(where.name, dir_fd=folder)
                return
            finally:
                os.close(fd)
        finally:
            os.close(folder)
