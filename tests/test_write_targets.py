"""Files cli-org writes where a user names them (issue 33, finding 1): `export --out /dev/zero`
as root turned the device into a 0600 file holding the whole export; a FIFO the same. One rule
(cli_org/local/files.py write_private): a target that exists and is not a regular file (a
device, a FIFO, a socket, a folder, a symlink to one) is one line and exit 1, nothing written,
the node left as it was. Device nodes are made in a temporary folder (char 1,5 is what
/dev/zero is), never the real ones."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

WORKTREE = Path(__file__).resolve().parents[1]

# Every command that writes a file the user names: its arguments before the path.
WRITERS = {
    "export": ("export", "--out"),
    "db-backup": ("db", "backup"),
    "eval-history-png": ("eval", "history", "--png"),
}


def _special(tmp_path: Path, kind: str) -> tuple[Path, int]:
    """A node of `kind` in tmp_path; the path handed to the command and the file type it
    must still have afterwards."""
    path = tmp_path / "target"
    if kind == "fifo":
        os.mkfifo(path)  # nobody reads: a write into it would block forever
        return path, stat.S_IFIFO
    if kind == "device":
        if os.geteuid() != 0:
            pytest.skip("making a device node needs root")
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 5))  # a private /dev/zero
        return path, stat.S_IFCHR
    if kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        sock.close()
        return path, stat.S_IFSOCK
    if kind == "link-to-device":
        if os.geteuid() != 0:
            pytest.skip("making a device node needs root")
        node = tmp_path / "zero"
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 5))
        path.symlink_to(node)
        return path, stat.S_IFLNK
    raise AssertionError(kind)


def _run(org, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("ORG_AGENT", "ORG_VIA")}
    env |= {**org.env, "PYTHONPATH": str(WORKTREE)}
    try:
        return subprocess.run(
            [sys.executable, "-m", "cli_org", *args], cwd=WORKTREE, env=env, capture_output=True, text=True, timeout=40
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"cli-org {' '.join(args)} hung (it opened the node for writing)")


@pytest.mark.slow
@pytest.mark.attack("files")
@pytest.mark.parametrize("kind", ["device", "fifo", "socket", "link-to-device"])
@pytest.mark.parametrize("command", list(WRITERS))
def test_a_named_output_that_is_not_a_regular_file_is_refused(org, tmp_path, command, kind):
    path, mode = _special(tmp_path, kind)
    before = sorted(os.listdir(tmp_path))
    done = _run(org, *WRITERS[command], str(path))
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert str(path) in done.stderr and ("not a regular file" in done.stderr or "symlink" in done.stderr), done.stderr
    assert stat.S_IFMT(os.lstat(path).st_mode) == mode  # the node is still what it was
    assert sorted(os.listdir(tmp_path)) == before  # no temporary or partial file left


@pytest.mark.slow
@pytest.mark.attack(None)  # the control: a regular file is still replaced (passed before too)
@pytest.mark.parametrize("command", list(WRITERS))
def test_a_named_regular_file_is_replaced(org, tmp_path, command):
    path = tmp_path / "out.file"
    path.write_bytes(b"old")
    done = _run(org, *WRITERS[command], str(path))
    assert done.returncode == 0, done.stderr
    assert path.read_bytes() != b"old" and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert os.listdir(tmp_path) == ["out.file"]


@pytest.mark.attack(None)  # a unit test of the rule itself
def test_the_rule_refuses_every_kind_of_node(tmp_path):
    from cli_org.local.files import FileRefused, write_private

    folder = tmp_path / "folder"
    folder.mkdir()
    (tmp_path / "to-folder").symlink_to(folder)
    for target in (folder, tmp_path / "to-folder"):
        with pytest.raises(FileRefused):
            write_private(target, b"x")
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(FileRefused, match="not a regular file"):
        write_private(tmp_path / "pipe", b"x")
    assert stat.S_ISFIFO(os.lstat(tmp_path / "pipe").st_mode)


@pytest.mark.slow
@pytest.mark.attack("files")
@pytest.mark.parametrize("command", list(WRITERS))
def test_a_named_file_of_another_user_is_not_replaced(org, tmp_path, command):
    # As root, a rename over another user's file put a 0600 file of root's in its place.
    if os.geteuid() != 0:
        pytest.skip("needs root, to give the file to another user")
    path = tmp_path / "theirs.file"
    path.write_bytes(b"theirs")
    os.chown(path, 65534, 65534)  # nobody
    done = _run(org, *WRITERS[command], str(path))
    assert done.returncode == 1 and "owned by another user" in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1 and path.read_bytes() == b"theirs" and path.stat().st_uid == 65534
    assert os.listdir(tmp_path) == ["theirs.file"]
