"""Files handed to cli-org by a checkout, a session folder or the command line (issue 21,
findings 2, 10 and 12): a symlink never carries a file from outside its root into the
archive, recall, the prompt hook or the agent page; a FIFO, a device or a /proc file gives
one line and exit 1, never a hang or a traceback; `export --out` is the owner's alone."""

from __future__ import annotations

import json
import os
import pwd
import stat
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from cli_org.config import Settings
from cli_org.recall.memory_arm import recall_memory
from cli_org.session.hooks import HookInput, claude_code_hook
from cli_org.store.agents import agent_detail, memory_file

pytestmark = pytest.mark.attack("files")

WORKTREE = Path(__file__).resolve().parents[1]
SECRET = "localhost:5432:*:admin:hunter2secret"


@pytest.fixture
def homes(tmp_path, monkeypatch):
    """Empty harness homes, so `archive memory` and `archive import` read only the test's files."""
    for name in ("CLAUDE_CONFIG_DIR", "HERMES_HOME", "CODEX_HOME"):
        folder = tmp_path / "homes" / name.lower()
        folder.mkdir(parents=True)
        monkeypatch.setenv(name, str(folder))


@pytest.fixture
def bot(org):
    """The attacker: a member logged in over TCP with her own password."""
    with org.login(f"{org.name}_bot", "bot-pw") as conn:
        yield conn


def _checkout(tmp_path: Path, how: str) -> Path:
    """A cloned repository whose bot memory leads to the admin's password file, and one
    honest memory file (the control: the memory arm did run)."""
    secret = tmp_path / "admin-home" / ".pgpass"
    secret.parent.mkdir()
    secret.write_text(SECRET + "\n")
    root = tmp_path / "checkout"
    (root / ".git").mkdir(parents=True)
    memory = root / ".agents" / "org" / "memory"
    if how == "file-link":
        memory.mkdir(parents=True)
        (memory / "notes.md").write_text("- localhost runs the staging proxy\n")
        (memory / "bot.md").symlink_to(os.path.relpath(secret, memory))
    else:  # the memory folder itself leads outside the checkout
        memory.parent.mkdir(parents=True)
        (secret.parent / "notes.md").write_text("- localhost runs the staging proxy\n")
        (secret.parent / "bot.md").symlink_to(".pgpass")
        memory.symlink_to(secret.parent)
    return root


@pytest.mark.slow
@pytest.mark.parametrize("how", ["file-link", "folder-link"])
def test_a_symlinked_memory_file_reaches_neither_archive_nor_recall_nor_hook_nor_page(
    org, cli, bot, homes, tmp_path, monkeypatch, how
):
    root = _checkout(tmp_path, how)
    monkeypatch.setenv("ORG_ROOT", str(root))
    code, out, err = cli("archive", "memory")
    assert code == 1 and "Traceback" not in err, (out, err)
    assert "bot.md" in err and ("symlink" in err), err
    stored = bot.execute("SELECT path, content FROM archive_memory_versions").fetchall()
    bot.rollback()
    assert all("hunter2secret" not in row["content"] for row in stored), stored
    if how == "file-link":
        assert [row["path"] for row in stored] == [".agents/org/memory/notes.md"]  # the honest file still is
    # recall's [memory] arm, the prompt hook and the agent page read through the same door
    assert all("hunter2secret" not in hit.text for hit in recall_memory(root, "localhost hunter2secret", limit=10))
    settings = Settings.from_env(org.env)
    hook = HookInput("UserPromptSubmit", "s-1", "localhost hunter2secret?", str(root))
    shown = claude_code_hook(bot, "prompt", hook, settings=settings)
    assert SECRET not in shown and "bot.md" not in shown  # (the prompt itself is echoed)
    if how == "file-link":  # the honest file is still read (the hook's bar passes no memory line)
        assert any("staging proxy" in hit.text for hit in recall_memory(root, "localhost hunter2secret", limit=10))
    assert memory_file(root, "bot") is None
    assert agent_detail(bot, "bot", root=root).memory_file is None


@pytest.mark.slow
def test_a_symlink_in_a_session_folder_is_not_followed(org, cli, bot, homes, tmp_path):
    outside = tmp_path / "shadow"
    line = {
        "type": "user",
        "sessionId": "s-leak",
        "uuid": "u-1",
        "cwd": "/w",
        "timestamp": "2026-11-01T10:00:00Z",
        "message": {"role": "user", "content": "root:$6$shadowhash:19000:0:99999:7:::"},
    }
    outside.write_text(json.dumps(line) + "\n")
    folder = tmp_path / "projects" / "-w"
    folder.mkdir(parents=True)
    (folder / "leak.jsonl").symlink_to(outside)
    code, out, err = cli("archive", "import", "--claude", str(tmp_path / "projects"))
    assert code == 1 and "leak.jsonl" in err and "symlink" in err and "Traceback" not in err, (out, err)
    assert bot.execute("SELECT count(*) AS n FROM archive_messages WHERE text LIKE '%shadowhash%'").fetchone()["n"] == 0
    paths = [r["path"] for r in bot.execute("SELECT path FROM archive_sources")]
    bot.rollback()
    assert not any("shadow" in p or "leak" in p for p in paths), paths


def _run(org, *args: str, agent: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("ORG_AGENT", "ORG_VIA")}
    env |= {**org.env, "PYTHONPATH": str(WORKTREE), **({"ORG_AGENT": agent} if agent else {})}
    try:
        return subprocess.run(
            [sys.executable, "-m", "cli_org", *args], cwd=WORKTREE, env=env, capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"cli-org {' '.join(args)} hung")


def _one_clear_line(done: subprocess.CompletedProcess, code: int = 1) -> str:
    assert done.returncode == code, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    return done.stderr


COMMANDS = {
    "eval-golden": ("eval", "golden"),
    "eval-noise": ("eval", "noise"),
    "notebook-import": ("notebook", "import", "--target", "memory"),
    "import": ("import",),
    "archive-import-hermes": ("archive", "import", "--hermes"),
}


@pytest.mark.slow
@pytest.mark.parametrize("special", ["fifo", "dev-zero"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_fifo_or_device_gives_one_line_and_exit_1_not_a_hang(org, tmp_path, command, special):
    if special == "fifo":
        path = tmp_path / "pipe.txt"
        os.mkfifo(path)  # nobody ever writes: a blocking open or read never returns
    else:
        path = Path("/dev/zero")  # endless
    err = _one_clear_line(_run(org, *COMMANDS[command], str(path), agent="bot"))
    assert str(path) in err and "not a regular file" in err, err


@pytest.mark.slow
def test_import_of_a_proc_file_is_one_line(org):
    err = _one_clear_line(_run(org, "import", "/proc/self/mem"))
    assert "/proc/self/mem" in err and "not a regular file" in err, err


@pytest.mark.slow
def test_vault_scan_of_a_symlink_loop_is_one_line(org, tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    err = _one_clear_line(_run(org, "vault", "scan", str(tmp_path / "a")))
    assert "symlink loop" in err, err


@pytest.mark.slow
@pytest.mark.attack(None)  # passed on main too: a guard, not counted
def test_a_symlink_loop_inside_the_vault_is_a_warning(org, tmp_path):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "good.md").write_text("# Good\n\nfine\n")
    (vault / "loop.md").symlink_to(vault / "loop.md")
    done = _run(org, "vault", "scan", str(vault))
    assert done.returncode == 0 and "Traceback" not in done.stderr and "loop.md: " in done.stderr, done.stderr
    assert "added 1" in done.stdout, done.stdout


# --- export --out ----------------------------------------------------------------------------


@pytest.fixture
def stranger():
    """Another Unix user of this machine, created for the test and removed after."""
    if os.geteuid() != 0:
        pytest.skip("creating a second Unix user needs root")
    name = f"clio{uuid.uuid4().hex[:8]}"
    subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True)
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], check=False)


@pytest.mark.slow
def test_another_local_user_cannot_read_an_export(org, stranger):
    shared = Path(tempfile.mkdtemp(prefix="cli-org-export-"))
    try:
        shared.chmod(0o755)  # a folder the other user may enter, as a home folder often is
        out = shared / "org.jsonl"
        done = _run(org, "export", "--out", str(out))
        assert done.returncode == 0, done.stderr
        assert stat.S_IMODE(out.stat().st_mode) == 0o600
        assert os.listdir(shared) == ["org.jsonl"]  # no temp file left behind
        peek = subprocess.run(["cat", str(out)], user=stranger.pw_uid, group=stranger.pw_gid, capture_output=True)
        assert peek.returncode != 0 and peek.stdout == b""
    finally:
        for child in shared.iterdir():
            child.unlink()
        shared.rmdir()


@pytest.mark.slow
def test_export_never_writes_through_a_symlink(org, tmp_path):
    victim = tmp_path / "bashrc"
    victim.write_text("# the user's own file\n")
    link = tmp_path / "org.jsonl"
    link.symlink_to(victim)
    err = _one_clear_line(_run(org, "export", "--out", str(link)))
    assert "symlink" in err and victim.read_text() == "# the user's own file\n"


@pytest.mark.slow
def test_export_into_a_missing_folder_is_one_line(org, tmp_path):
    err = _one_clear_line(_run(org, "export", "--out", str(tmp_path / "nowhere" / "org.jsonl")))
    assert "does not exist" in err and not (tmp_path / "nowhere").exists()


# --- the one reader (cli_org/local/files.py) -------------------------------------------------------


@pytest.mark.attack(None)  # a unit test of the reader, not an attack: not counted
def test_the_reader_refuses_every_way_out_of_its_root(tmp_path):
    import socket

    from cli_org.local.files import FileRefused, read_file

    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.md").write_text(SECRET)
    (root / "sub" / "ok.md").write_text("fine")
    (root / "linked").symlink_to(outside)  # a folder on the way is a symlink
    (root / "sub" / "inner.md").symlink_to(root / "sub" / "ok.md")  # even one that stays inside
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(root / "sock.md"))
    try:
        assert read_file(root / "sub" / "ok.md", root=root).data == b"fine"
        refused = {
            root / "linked" / "secret.md": "symlink",
            root / "sub" / "inner.md": "symlink",
            root / ".." / "outside" / "secret.md": "not inside",
            root / "sock.md": "not a regular file",
            root / "sub": "not a regular file",
        }
        for path, reason in refused.items():
            with pytest.raises(FileRefused, match=reason):
                read_file(path, root=root)
        with pytest.raises(FileRefused, match="larger than 3 bytes"):
            read_file(root / "sub" / "ok.md", root=root, limit=3)
    finally:
        server.close()
