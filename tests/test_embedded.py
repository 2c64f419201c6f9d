"""The embedded server: started once, reused, shared by concurrent callers, stopped on request."""

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
