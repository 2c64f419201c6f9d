"""The README's set-up commands are the ones CI and users actually run."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _commands():
    readme = (ROOT / "README.md").read_text()
    setup = readme.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", setup)


def test_exactly_two_setup_commands():
    assert len(_commands()) == 2


def test_ci_runs_the_readme_test_command():
    test_command = _commands()[1]
    assert "pytest" in test_command
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert test_command in ci_lines


def test_demo_script_exists():
    assert "scripts/demo.sh" in _commands()[0] and (ROOT / "scripts" / "demo.sh").is_file()
