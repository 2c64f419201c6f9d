"""scripts/demo.sh says which database it writes to and how to keep exploring it.

The demo itself (scan, embed, recall) takes about 40 s here, so this test runs the script
with a stand-in `cli-org` on PATH that records each call and the database it was aimed at;
the real commands are tested everywhere else."""

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

STAND_IN = """#!/bin/sh
echo "${CLI_ORG_DATABASE:-} $*" >> "$CALLS"
case "$1" in
  remember) echo 7 ;;
  agents) echo '[]' ;;
  archive) find "$4" -name '*.jsonl' | wc -l >> "$SEEN"; if test -f "$4/state.db"; then echo db >> "$SEEN"; fi ;;
esac
"""


def _demo(tmp_path, **env):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "cli-org").write_text(STAND_IN)
    (bin_dir / "cli-org").chmod(0o755)
    calls = tmp_path / "calls"
    seen = tmp_path / "seen"  # what the stand-in found to import
    drop = ("CLI_ORG_DATABASE", "ORG_AGENT", "CLI_ORG_DATA_DIR", "XDG_DATA_HOME")
    base = {k: v for k, v in os.environ.items() if k not in drop}
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "demo.sh")],
        env={**base, "PATH": f"{bin_dir}:{os.environ['PATH']}", "CALLS": str(calls), "SEEN": str(seen), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done, calls.read_text().splitlines()


def test_demo_names_its_database_first_and_says_how_to_explore_it(tmp_path):
    done, calls = _demo(tmp_path, CLI_ORG_DATA_DIR=str(tmp_path / "data"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "This demo writes to the database 'org_demo' on the embedded server"
    assert str(tmp_path / "data") in lines[1] and "'org' is not touched" in lines[1]
    assert f"  export CLI_ORG_DATABASE=org_demo ORG_ROOT={ROOT / 'eval' / 'sample'} ORG_AGENT=builder" in lines
    assert lines[-1].startswith("Without CLI_ORG_DATABASE, cli-org uses the database 'org'")
    # Every call went to the demo database, none to 'org'.
    assert calls and all(call.startswith("org_demo ") for call in calls)


def test_demo_honours_a_chosen_database(tmp_path):
    done, calls = _demo(tmp_path, CLI_ORG_DATABASE="tour")
    assert done.returncode == 0, done.stderr
    assert "database 'tour'" in done.stdout.splitlines()[0] and "export CLI_ORG_DATABASE=tour " in done.stdout
    assert all(call.startswith("tour ") for call in calls)


def test_demo_names_the_real_data_folder_not_a_variable(tmp_path):
    done, _ = _demo(tmp_path, XDG_DATA_HOME=str(tmp_path / "xdg"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].startswith(f"(data folder {tmp_path / 'xdg' / 'cli-org'});")
    done, _ = _demo(tmp_path / "home", HOME=str(tmp_path / "home"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].startswith(f"(data folder {tmp_path / 'home' / '.local/share/cli-org'});")
    assert "$" not in done.stdout.splitlines()[1]


def test_demo_imports_its_own_sample_sessions_not_the_users(tmp_path):
    done, calls = _demo(tmp_path)
    assert done.returncode == 0, done.stderr
    imports = [call.split()[1:] for call in calls if call.split()[1:3] == ["archive", "import"]]
    # One store a call, each named (so the import reads none of the harnesses' usual places),
    # each with the agent whose sessions they are.
    assert [(w[2], w[4:]) for w in imports] == [
        ("--claude", ["--agent", "builder"]),
        ("--codex", ["--agent", "reviewer"]),
        ("--hermes", ["--agent", "ops"]),
    ]
    folder = Path(imports[0][3]).parent
    assert [Path(w[3]) for w in imports] == [folder / "claude", folder / "codex", folder / "hermes"]
    # They were there when it ran (five transcripts and a state.db; the stand-in counted
    # them), laid out apart from the repository, and gone after the demo.
    assert (tmp_path / "seen").read_text().split() == ["3", "2", "0", "db"]
    assert ROOT not in folder.parents and not folder.exists()
