"""The README says what the program does: its set-up commands, commands, settings and
benchmarks are checked against the code that runs them."""

import importlib.util
import re
from pathlib import Path

import click
import pytest

from cli_org.config import Settings
from cli_org.faces.cli import cli as group

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


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


def test_the_demo_installs_like_ci_and_runs_only_real_commands():
    demo, test = _commands()
    # The same venv and pins as the command CI runs; only the extra and the last step differ.
    assert demo.split("-e ", 1)[0] == test.split("-e ", 1)[0]
    assert demo.endswith("&& bash scripts/demo.sh") and "'.[index]'" in demo
    script = (ROOT / "scripts" / "demo.sh").read_text() + (ROOT / "scripts" / "load-sample.sh").read_text()
    called = re.findall(r"^\s*(?:[A-Z_]+=\S+ )*cli-org ((?:[a-z]+ ?)+)", script, flags=re.M)  # run, not echoed
    assert called, "the demo runs no cli-org command"
    for words in called:
        assert _resolve(words.split()) is not None, f"demo.sh runs `cli-org {words.strip()}`, which does not exist"


# --- commands ----------------------------------------------------------------------------


def _resolve(words):
    """The click command a README usage names, and the words left for its arguments."""
    command, rest = group, list(words)
    while isinstance(command, click.Group) and rest and rest[0] in command.commands:
        command = command.commands[rest.pop(0)]
    # A group that runs on its own (`facts`) is a command too.
    runs_alone = not isinstance(command, click.Group) or command.invoke_without_command
    return (command, rest) if runs_alone else None


USAGES = [
    usage
    for line in README.splitlines()
    if line.startswith("### `cli-org")
    for usage in re.findall(r"`cli-org ([^`]+)`", line)
]


def test_the_readme_documents_every_command():
    documented = set()
    for usage in USAGES:
        words = usage.split()
        while words and _resolve(words) is None or (words and _resolve(words)[1]):
            words.pop()
        documented.add(tuple(words))
    leaves = set()

    def walk(command, path=()):
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, (*path, name)) if isinstance(sub, click.Group) else leaves.add((*path, name))

    walk(group)
    assert len(USAGES) >= 20
    missing = sorted(" ".join(path) for path in leaves - documented)
    assert not missing, f"commands without a README heading: {missing}"


# These usage lines leave out an option the command has; the README, not the code, is behind.
BEHIND: dict[str, str] = {}


def _usage_case(usage):
    path = " ".join(re.findall(r"^(?:[a-z]+ ?)+", usage)[0].split())
    if path in BEHIND:
        reason = f"README: the usage line of `cli-org {path}` omits {BEHIND[path]}, which the command takes"
        return pytest.param(usage, marks=pytest.mark.xfail(strict=True, reason=reason))
    return usage


@pytest.mark.parametrize("usage", [_usage_case(u) for u in USAGES])
def test_each_documented_usage_matches_the_command(usage):
    words = [w for w in re.split(r"[\s\[\]]+", usage) if w]
    path = []
    while words and re.fullmatch(r"[a-z]+", words[0]):
        path.append(words.pop(0))
    found = _resolve(path)
    assert found is not None and not found[1], f"`cli-org {' '.join(path)}` is not a command"
    command = found[0]
    options = {name: p for p in command.params if isinstance(p, click.Option) for name in p.opts}
    arguments = [p for p in command.params if isinstance(p, click.Argument)]
    shown_options, shown_arguments = [], []
    while words:
        word = words.pop(0)
        if word == "--":  # the rest is passed through: one variadic argument
            shown_arguments.append(" ".join(["--", *words]))
            words = []
        elif word.startswith("--"):
            assert word in options, f"`cli-org {' '.join(path)}` has no option {word}"
            shown_options.append(word)
            if not options[word].is_flag:
                assert words and not words[0].startswith("--"), f"{word} takes a value; the README shows none"
                words.pop(0)
        else:
            shown_arguments.append(word)
    assert len(shown_arguments) == len(arguments), f"{usage}: arguments {shown_arguments} vs {arguments}"
    # Every option the command has is in its usage line (--help aside).
    undocumented = {p.opts[0] for p in command.params if isinstance(p, click.Option)} - set(shown_options)
    assert not undocumented, f"`cli-org {' '.join(path)}` options missing from the README: {sorted(undocumented)}"
    # An argument in brackets is optional, one without is required.
    for shown, argument in zip(shown_arguments, arguments, strict=True):
        optional = f"[{shown}]" in usage or f"[{shown}" in usage
        assert argument.required is not optional, f"{usage}: {shown} required={argument.required}"


# --- settings ----------------------------------------------------------------------------

SETTINGS = re.findall(r"^\| `([A-Z_]+)` \|", _section("Settings"), flags=re.M)


def test_the_settings_table_lists_every_variable():
    assert len(SETTINGS) == 15 and len(set(SETTINGS)) == len(SETTINGS)


@pytest.mark.parametrize("variable", SETTINGS)
def test_each_setting_is_read_by_config(variable):
    default = Settings.from_env({})
    changed = []
    for value in ("0.5", "demo", "/tmp/cli-org-readme", "bot@host", "postgresql://u@localhost/d"):
        try:
            settings = Settings.from_env({variable: value})
        except Exception:  # a value of the wrong shape for this variable: try the next
            continue
        if settings != default:
            changed.append(value)
    assert changed, f"{variable} is in the README's Settings table but Settings.from_env ignores it"


# --- benchmarks --------------------------------------------------------------------------

BENCHMARKS = re.findall(r"python -m (benchmarks\.\w+)", _section("Benchmarks"))


def test_the_benchmarks_section_names_them():
    assert len(BENCHMARKS) >= 7


@pytest.mark.parametrize("module", BENCHMARKS)
def test_each_named_benchmark_is_a_runnable_module(module):
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin, f"{module} does not exist"
    assert Path(spec.origin).resolve().is_relative_to(ROOT / "benchmarks")
    assert 'if __name__ == "__main__":' in Path(spec.origin).read_text(), f"{module} does nothing when run"
