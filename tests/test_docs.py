"""The reference in docs/ says what the program does: the command reference is generated from
the commands and current, every command is described on a topic page with its real options,
the settings and benchmarks named exist, and every link in README.md and docs/ lands."""

import importlib.util
import re
from pathlib import Path

import click
import pytest

from cli_org.config import Settings
from cli_org.faces.cli import cli as group
from tests.helpers import resolve

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
# The pages that describe commands in prose (the generated reference and the index aside).
TOPICS = sorted(p for p in DOCS.glob("*.md") if p.name not in ("commands.md", "README.md"))


def _generator():
    spec = importlib.util.spec_from_file_location("docs_commands", ROOT / "scripts" / "docs_commands.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _section(page: str, title: str) -> str:
    return (DOCS / page).read_text().split(f"\n## {title}", 1)[1].split("\n## ", 1)[0]


def _commands(command=group, path=()):
    """Every command a user can run: the leaves, and groups that run on their own."""
    for name, sub in getattr(command, "commands", {}).items():
        if isinstance(sub, click.Group):
            if sub.invoke_without_command:
                yield (*path, name)
            yield from _commands(sub, (*path, name))
        else:
            yield (*path, name)


# --- the generated reference ---------------------------------------------------------------


def test_the_command_reference_is_current():
    docs = _generator()
    current = docs.PAGE.read_text()
    assert docs.BEGIN in current and docs.END in current
    assert current == docs.expected(current, docs.command_group()), (
        "docs/commands.md is stale: run python scripts/docs_commands.py"
    )


def test_the_command_reference_has_every_command():
    headings = set(re.findall(r"^## (cli-org.*)$", (DOCS / "commands.md").read_text(), flags=re.M))
    missing = [" ".join(path) for path in _commands() if f"cli-org {' '.join(path)}" not in headings]
    assert not missing, f"not in docs/commands.md: {missing}"


def test_the_check_mode_says_what_is_stale(tmp_path, capsys):
    docs = _generator()
    page = tmp_path / "commands.md"
    current = docs.expected(docs.PAGE.read_text(), docs.command_group())
    page.write_text(current.replace("Hits in all", "Hits, all told", 1))
    docs.PAGE, docs.ROOT = page, tmp_path
    assert docs.main(["--check"]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("commands.md is stale: 1 line(s) differ") and "under cli-org recall" in line
    assert docs.main([]) == 0 and docs.main(["--check"]) == 0 and page.read_text() == current


# --- topic pages ---------------------------------------------------------------------------

USAGES = [
    (page.name, usage)
    for page in TOPICS
    for line in page.read_text().splitlines()
    if line.startswith("### `cli-org")
    for usage in re.findall(r"`cli-org ([^`]+)`", line)
]


def test_every_command_is_described_on_a_topic_page():
    documented = set()
    for _, usage in USAGES:
        words = [w for w in usage.split() if re.fullmatch(r"[a-z-]+", w)]
        found = resolve(words)
        if found is not None:
            documented.add(tuple(words[: len(words) - len(found[1])]))
    missing = sorted(" ".join(path) for path in set(_commands()) - documented)
    assert not missing, f"commands without a `### cli-org ...` heading on a page of docs/: {missing}"


@pytest.mark.parametrize("page, usage", USAGES, ids=[f"{p}:{u.split(' [')[0]}" for p, u in USAGES])
def test_each_documented_usage_matches_the_command(page, usage):
    words = [w for w in re.split(r"[\s\[\]]+", usage) if w]
    path = []
    while words and re.fullmatch(r"[a-z]+", words[0]):
        path.append(words.pop(0))
    found = resolve(path)
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
                assert words and not words[0].startswith("--"), f"{word} takes a value; {page} shows none"
                words.pop(0)
        else:
            shown_arguments.append(word)
    assert len(shown_arguments) == len(arguments), f"{usage}: arguments {shown_arguments} vs {arguments}"
    # Every option the command has is in its usage line (--help aside).
    undocumented = {p.opts[0] for p in command.params if isinstance(p, click.Option)} - set(shown_options)
    assert not undocumented, f"`cli-org {' '.join(path)}` options missing from {page}: {sorted(undocumented)}"
    # An argument in brackets is optional, one without is required.
    for shown, argument in zip(shown_arguments, arguments, strict=True):
        optional = f"[{shown}]" in usage or f"[{shown}" in usage
        assert argument.required is not optional, f"{usage}: {shown} required={argument.required}"


MENTIONS = [
    (page.name, usage)
    for page in [*sorted(DOCS.glob("*.md")), ROOT / "README.md"]
    for usage in re.findall(r"`cli-org ([a-z][^`]*)`", page.read_text())
]


def test_each_command_named_in_the_docs_exists():
    """Any `cli-org WORD ...` in the prose names a command: each leading word is one of the
    group's commands (docs/web.md named a `cli-org todos` that is `cli-org todo list`)."""
    wrong = []
    for page, usage in MENTIONS:
        command, words = group, usage.split()
        while isinstance(command, click.Group) and words and re.fullmatch(r"[a-z][a-z-]*", words[0]):
            word = words.pop(0)
            if word not in command.commands:
                wrong.append(f"{page}: `cli-org {usage}`")
                break
            command = command.commands[word]
    assert not wrong, f"not commands: {wrong}"


# --- settings and benchmarks -----------------------------------------------------------------

SETTINGS = re.findall(r"^\| `([A-Z_]+)` \|", _section("operations.md", "Settings"), flags=re.M)


def test_the_settings_table_lists_every_variable():
    assert len(SETTINGS) == 15 and len(set(SETTINGS)) == len(SETTINGS)
    readme = (ROOT / "README.md").read_text()
    shown = set(re.findall(r"^\| `([A-Z_]+)` \|", readme.split("\n## Settings", 1)[1], flags=re.M))
    assert shown and shown <= set(SETTINGS), "the README shows a setting the full table lacks"


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
    assert changed, f"{variable} is in the Settings table of docs/operations.md but Settings.from_env ignores it"


BENCHMARKS = re.findall(r"python -m (benchmarks\.\w+)", _section("operations.md", "Benchmarks"))


def test_the_benchmarks_section_names_them():
    assert len(BENCHMARKS) >= 7


@pytest.mark.parametrize("module", BENCHMARKS)
def test_each_named_benchmark_is_a_runnable_module(module):
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin, f"{module} does not exist"
    assert Path(spec.origin).resolve().is_relative_to(ROOT / "benchmarks")
    assert 'if __name__ == "__main__":' in Path(spec.origin).read_text(), f"{module} does nothing when run"


# --- links ---------------------------------------------------------------------------------

PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)\)")


def _prose(text: str) -> list[str]:
    """The lines outside fenced code blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def anchors(page: Path) -> set[str]:
    """The #anchors a page's headings get, as the code host makes them: the heading's text
    in lower case, without punctuation other than - and _, spaces as hyphens, and a -1, -2
    suffix for a repeated one."""
    seen: dict[str, int] = {}
    found = set()
    for line in _prose(page.read_text()):
        heading = re.match(r"^#{1,6} (.+?)\s*#*$", line)
        if not heading:
            continue
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.group(1)).lower()
        slug = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def test_anchors_follow_the_code_hosts_rule():
    assert {"set-up-two-commands", "your-own-team-in-five-commands"} <= anchors(ROOT / "README.md")
    assert {"cli-org-db-status", "what-every-command-keeps"} <= anchors(DOCS / "commands.md")
    assert "load-and-faults-stress" in anchors(DOCS / "operations.md")


def _links():
    for page in PAGES:
        for line in _prose(page.read_text()):
            for target in LINK.findall(line):
                if not re.match(r"[a-z]+:", target):  # http:, mailto: ... are not checked here
                    yield page, target


LINKS = list(_links())


def test_the_pages_link_to_each_other():
    assert len(LINKS) >= 30
    assert {p.name for p, _ in LINKS} >= {"README.md", "commands.md", "operations.md", "design.md"}


@pytest.mark.parametrize("page, target", LINKS, ids=[f"{p.name}->{t}" for p, t in LINKS])
def test_each_relative_link_lands(page, target):
    path, _, anchor = target.partition("#")
    file = (page.parent / path).resolve() if path else page
    assert file.exists(), f"{page.name}: {target} names no file"
    if anchor:
        assert file.suffix == ".md", f"{page.name}: {target}: an anchor in a file that is not markdown"
        assert anchor in anchors(file), f"{page.name}: {target}: {file.name} has no heading #{anchor}"
