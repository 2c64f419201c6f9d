"""Property tests for every parser of outside input: whatever the bytes (malformed, deeply
nested, not UTF-8, lone surrogates, NaN), a parser returns something the database accepts or
raises the project's own error; never another exception, never a hang.

Kept small (150 examples each, a few seconds in all) because they run on every change.

Below them, every command line and every MCP tool with hostile arguments (issue 21, finding
12): about 2,000 cases, 5 minutes on a quiet 2-core machine. CLI_ORG_FUZZ_REPORT=FILE appends
one JSON line per command (cases run, problems found) for the counts the issue asks for.
"""

import contextlib
import json
import math
import os
import re
import signal
import tempfile
from datetime import datetime
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli_org.archive import claude, codex, hermes
from cli_org.archive.importer import parse_line
from cli_org.archive.records import Parsed
from cli_org.checks.rules import AGENT_NAME
from cli_org.errors import OrgError
from cli_org.evaluation import load_golden, load_queries, parse_golden, parse_queries
from cli_org.text import is_utf8
from cli_org.vault.markdown import parse_note

pytestmark = pytest.mark.slow

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Every code point, lone surrogates and NUL included.
any_char = st.characters(exclude_categories=())
any_text = st.text(any_char, max_size=30)
scalars = st.none() | st.booleans() | st.integers() | st.floats() | any_text
json_values = st.recursive(
    scalars, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(any_text, kids, max_size=4), max_leaves=20
)


def nested(n: int) -> list:
    value: list = []
    for _ in range(n):
        value = [value]
    return value


def either(*likely):
    """A field's usual values or anything at all."""
    return st.one_of(*likely, json_values)


def deep_text(n: int) -> str:
    return "[" * n + "]" * n


def lines_of(records) -> st.SearchStrategy[bytes]:
    """Records as JSON lines, plus the ways a line goes wrong."""
    as_json = records.map(lambda r: json.dumps(r, allow_nan=True).encode())  # surrogates as \\ud800 escapes
    return st.one_of(
        as_json,
        as_json.flatmap(lambda b: st.integers(0, len(b)).map(lambda k: b[:k])),  # cut short
        st.binary(max_size=200),
        st.integers(1, 100_000).map(lambda n: deep_text(n).encode()),
        st.integers(1, 3000).map(
            lambda n: b'{"type": "user", "sessionId": "s", "message": ' + deep_text(n).encode() + b"}"
        ),
        st.builds(lambda a, b: a + b"\xff\xfe" + b, as_json, as_json),
    )


def storable(value) -> bool:
    """A string PostgreSQL stores as text: it encodes to UTF-8 and holds no NUL."""
    value.encode("utf-8")  # raises on a lone surrogate
    return isinstance(value, str) and "\x00" not in value


def assert_storable(parsed: Parsed) -> None:
    """What the importer hands PostgreSQL: UTF-8 strings without NUL, JSON without NaN."""
    assert isinstance(parsed, Parsed)
    for info in parsed.sessions:
        for name in ("external_id", "parent", "cwd", "git_branch", "model", "title"):
            value = getattr(info, name)
            assert value is None or storable(value)
        assert all(isinstance(t, datetime | None) for t in (info.started_at, info.ended_at))
    for m in parsed.messages:
        for name in ("session", "source_key", "text", "tool_name", "tool_call_id", "command"):
            value = getattr(m, name)
            assert value is None or storable(value)
        assert (
            isinstance(m.position, int)
            and isinstance(m.part, int)
            and m.kind in ("user", "assistant", "tool", "system")
        )
        assert storable(json.dumps(m.raw, allow_nan=False, ensure_ascii=False))


def parse_all(transcript, lines: list[bytes]) -> None:
    for n, line in enumerate(lines, start=1):
        with contextlib.suppress(OrgError):
            assert_storable(parse_line(transcript, line, n))


block = st.fixed_dictionaries(
    {"type": either(st.sampled_from(["text", "thinking", "tool_use", "tool_result", "image"]))},
    optional={
        "text": either(any_text),
        "thinking": either(any_text),
        "name": either(st.just("Bash"), any_text),
        "id": either(any_text),
        "input": either(st.fixed_dictionaries({"command": either(any_text)})),
        "tool_use_id": either(any_text),
        "content": either(any_text, st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": any_text}))),
    },
)
claude_records = st.fixed_dictionaries(
    {"type": either(st.sampled_from(["user", "assistant", "system", "progress"]))},
    optional={
        "sessionId": either(any_text),
        "uuid": either(any_text),
        "agentId": either(any_text),
        "cwd": either(any_text),
        "gitBranch": either(any_text),
        "timestamp": either(any_text, st.just("2026-11-01T10:00:00Z"), st.floats()),
        "isMeta": json_values,
        "content": either(any_text),
        "subtype": json_values,
        "message": either(
            st.fixed_dictionaries(
                {},
                optional={
                    "model": either(any_text),
                    "content": either(any_text, st.lists(block, max_size=3)),
                },
            )
        ),
    },
)


@FUZZ
@given(st.lists(lines_of(claude_records), max_size=4), st.booleans())
def test_claude_line_parser(lines, subagent):
    path = Path("/p/-w/s/subagents/agent-a1.jsonl" if subagent else "/p/-w/s.jsonl")
    parse_all(claude.TranscriptFile(path), lines)


item = st.fixed_dictionaries(
    {
        "type": either(
            st.sampled_from(["message", "reasoning", "function_call", "function_call_output", "local_shell_call"])
        )
    },
    optional={
        "role": either(st.sampled_from(["user", "assistant"])),
        "content": either(st.lists(st.fixed_dictionaries({"text": either(any_text)}), max_size=3)),
        "summary": either(st.lists(st.fixed_dictionaries({"text": either(any_text)}), max_size=3)),
        "name": either(st.sampled_from(["shell", "exec_command"]), any_text),
        "arguments": either(any_text, json_values.map(json.dumps), st.integers(1, 5000).map(deep_text)),
        "call_id": either(any_text),
        "output": json_values,
        "action": either(st.fixed_dictionaries({"command": either(st.lists(any_text, max_size=3))})),
    },
)
codex_records = st.fixed_dictionaries(
    {"type": either(st.sampled_from(["session_meta", "turn_context", "response_item", "event_msg"]))},
    optional={
        "timestamp": either(any_text, st.floats()),
        "payload": either(
            item,
            st.fixed_dictionaries(
                {}, optional={"id": either(any_text), "cwd": either(any_text), "model": either(any_text)}
            ),
        ),
        "id": json_values,
    },
)


@FUZZ
@given(st.lists(lines_of(codex_records), max_size=4), st.booleans())
def test_codex_line_parser(lines, named):
    stem = "rollout-2026-11-01T10-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b" if named else "rollout-x"
    parse_all(codex.TranscriptFile(Path(f"/s/{stem}.jsonl")), lines)


sqlite_values = st.none() | st.integers() | st.floats() | any_text | st.binary(max_size=20)
tool_calls = st.one_of(
    sqlite_values,
    st.lists(
        st.fixed_dictionaries(
            {},
            optional={
                "id": json_values,
                "function": either(
                    st.fixed_dictionaries({"name": either(st.just("terminal")), "arguments": either(any_text)})
                ),
            },
        ),
        max_size=3,
    ).map(json.dumps),
    st.integers(1, 5000).map(deep_text),
)


@FUZZ
@given(
    st.fixed_dictionaries(
        {"id": sqlite_values, "session_id": sqlite_values, "role": sqlite_values},
        optional={
            "content": sqlite_values,
            "tool_calls": tool_calls,
            "tool_name": sqlite_values,
            "tool_call_id": sqlite_values,
            "timestamp": sqlite_values,
        },
    ),
    st.fixed_dictionaries(
        {"id": sqlite_values},
        optional={
            "parent_session_id": sqlite_values,
            "cwd": sqlite_values,
            "model": sqlite_values,
            "title": sqlite_values,
            "started_at": sqlite_values,
            "ended_at": sqlite_values,
        },
    ),
)
def test_hermes_row_parsers(message, session):
    for parse, row in ((hermes.message_row, message), (hermes.session_row, session)):
        with contextlib.suppress(OrgError):
            assert_storable(parse(row))


# --- markdown notes and their front matter ----------------------------------------------------

yaml_tokens = list("ab1.:-&*[]{}!|>'\"%@`#,? \n\t\\") + ["\x00", "\ud800", "é", ".nan", "~", "\\ud800", "\\0"]
yaml_text = st.lists(st.sampled_from(yaml_tokens), max_size=60).map("".join)


def laughs(levels: int, width: int) -> str:
    rows = [f"l0: &l0 [{','.join(['lol'] * width)}]"]
    rows += [f"l{i}: &l{i} [{','.join([f'*l{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join(rows)


front_matter = st.one_of(
    yaml_text,
    st.builds(laughs, st.integers(1, 12), st.integers(1, 12)),
    st.just("a: &a [*a]"),
    st.integers(1, 20_000).map(lambda n: "k: " + "[" * n),
    st.integers(1, 200).map(lambda n: "k: " + deep_text(n)),
    st.sampled_from(["n: .nan", "n: -.inf", "d: 2024-13-01", "i: " + "9" * 5000, "b: !!binary aGk=", "s: !!set {a}"]),
)
notes = st.one_of(
    st.text(any_char, max_size=300),
    st.builds(lambda f, b: f"---\n{f}\n---\n{b}", front_matter, st.text(any_char, max_size=200)),
)


@FUZZ
@given(notes)
def test_markdown_parser(text):
    try:
        note = parse_note(text, "fuzz/note.md")
    except OrgError:
        return
    assert storable(json.dumps(note.frontmatter, allow_nan=False, ensure_ascii=False))
    for value in (note.title, *(c.content for c in note.chunks), *(c.heading for c in note.chunks), *note.tags):
        assert storable(value)
    for link in note.links:
        assert storable(link.target)


# --- golden and noise files ---------------------------------------------------------------------

golden_text = st.one_of(
    st.text(any_char, max_size=200),
    st.lists(st.tuples(any_text, any_text, any_text).map("|".join), max_size=5).map("\n".join),
)


@FUZZ
@given(golden_text)
def test_golden_and_noise_text_parsers(text):
    with contextlib.suppress(OrgError):
        for case in parse_golden(text, "g.txt"):
            assert storable(case.question) and storable(case.expected) and case.line >= 1
    with contextlib.suppress(OrgError):
        assert all(storable(q) for q in parse_queries(text, "n.txt"))


@FUZZ
@given(st.binary(max_size=300) | golden_text.map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_golden_and_noise_file_loaders(data):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "file.txt"
        path.write_bytes(data)
        for load in (load_golden, load_queries):
            try:
                load(path)
            except OrgError as exc:
                assert str(path) in str(exc) or "cannot read" in str(exc)


# --- every command line, with hostile arguments (issue 21, finding 12) --------------------------
#
# Each command runs in-process (click's CliRunner) against a real database, once per parameter
# and hostile value, the other parameters at ordinary values. Whatever the value: no traceback,
# an exit code in {0, 1, 2}, one line on stderr when it fails, never a raw SQL error, and an
# answer within CASE_SECONDS; a value the parameter's type cannot hold (a number out of range,
# nan, an invalid agent name, text that is not UTF-8) is a usage error, exit 2. `hook` fails
# open: always exit 0.

HOSTILE = {
    "bigint+1": str(2**63),
    "huge": "9" * 40,
    "-bigint-1": str(-(2**63) - 1),
    "negative": "-1",
    "zero": "0",
    "nan": "nan",
    "inf": "inf",
    "-inf": "-inf",
    "empty": "",
    "10 KB": "x" * 10_000,
    "NUL": "a\x00b",
    "not UTF-8": os.fsdecode(b"\xff\xfe"),  # what Python holds for those argv bytes (surrogateescape)
    "newline": "a\nb",
}
# Commands that serve until stopped, or stop or replace the suite's server: their parsing is
# fuzzed (the command's body replaced by a no-op), not their work.
PARSE_ONLY = {"db start", "db stop", "db psql", "db restore", "serve", "mcp", "warm serve"}
AGENT_PARAMS = {"agent", "owner", "lead"}  # the options that name an agent
CASE_SECONDS = 30
# What the database says when a value reaches it unchecked (a Python int past bigint is sent as numeric).
RAW_SQL = re.compile(r"out of range for type|invalid input syntax|integer out of range|psycopg|SQLSTATE|\(numeric")
# Ordinary values by parameter name, where a generic word would be refused before the fuzzed one is read.
ORDINARY = {"source": "docs/fuzz.md", "claim": "Deploys run from scripts/deploy.sh on main", "subject": "deploy"}


def commands(group: click.Group, path: tuple[str, ...] = ()):
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from commands(command, (*path, name))
        else:
            yield " ".join((*path, name)), command


def _ordinary(param: click.Parameter, folder: Path) -> str:
    """A value the parameter accepts, for the parameters not being fuzzed."""
    kind = param.type
    if param.name in AGENT_PARAMS:
        return "bot"
    if param.name == "name":
        return "newbie"
    if param.name in ORDINARY:
        return ORDINARY[param.name]
    if isinstance(kind, click.Choice):
        return str(kind.choices[0])
    if isinstance(kind, click.IntRange | click.FloatRange):
        return str(kind.min if kind.min is not None else 1)
    if isinstance(kind, click.types.IntParamType | click.types.FloatParamType):
        return "1"
    if isinstance(kind, click.Path) and kind.file_okay is False:
        return str(folder)
    if isinstance(kind, click.Path | click.File):
        return str(folder / "input.txt")
    return "deploy"


def _line(command: click.Command, fuzzed: click.Parameter, value: str, folder: Path) -> list[str]:
    args: list[str] = []
    for param in command.params:
        if isinstance(param, click.Option) and param.is_flag:
            continue
        if param is fuzzed or param.required or isinstance(param, click.Argument):
            given = value if param is fuzzed else _ordinary(param, folder)
            args += [given] if isinstance(param, click.Argument) else [param.opts[0], given]
    if "--dry-run" in {o for p in command.params for o in p.opts}:
        args.append("--dry-run")
    return args


def _must_refuse(name: str, param: click.Parameter, value: str) -> bool:
    """Whether `value` is one the parameter's type cannot hold: then it is a usage error."""
    if not is_utf8(value):
        return True
    kind = param.type
    if isinstance(kind, click.types.IntParamType):
        try:
            number = int(value)
        except ValueError:
            return True
        return not _within(kind, number, 1, 2**63 - 1)  # a plain int is an id, a bigint
    if isinstance(kind, click.types.FloatParamType):
        try:
            number = float(value)
        except ValueError:
            return True
        return not (math.isfinite(number) and _within(kind, number, -math.inf, math.inf))
    if isinstance(kind, click.Choice):
        return value not in kind.choices
    if isinstance(kind, click.Path):  # a name no file system takes
        return not value or "\x00" in value or len(value) > 255
    if param.name in AGENT_PARAMS or (name, param.name) == ("agents add", "name"):
        return not AGENT_NAME.match(value)
    return False


def _within(kind, number: float, low: float, high: float) -> bool:
    if isinstance(kind, click.IntRange | click.FloatRange):
        low = -math.inf if kind.min is None else kind.min
        high = math.inf if kind.max is None else kind.max
        if (kind.min_open and number == low) or (kind.max_open and number == high):
            return False
    return low <= number <= high


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def fuzz_command(org, monkeypatch, tmp_path, name: str, command: click.Command) -> list[str]:
    """Run `command` with every hostile value in every parameter; the problems found."""
    from cli_org.faces.cli import cli as group

    for key, value in {**org.env, "HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1"}.items():
        monkeypatch.setenv(key, value)
    for key in ("ORG_AGENT", "ORG_VIA", "CLI_ORG_READ_URL"):
        monkeypatch.delenv(key, raising=False)
    (tmp_path / "home").mkdir()
    monkeypatch.chdir(tmp_path)  # what a command writes to a relative path stays in the test's folder
    (tmp_path / "input.txt").write_text("deploy\n")
    if name in PARSE_ONLY:
        monkeypatch.setattr(command, "callback", lambda **kwargs: None)
    runner = CliRunner()
    problems: list[str] = []
    previous = signal.signal(signal.SIGALRM, _alarm)
    try:
        for param in command.params:
            if isinstance(param, click.Option) and param.is_flag:
                continue
            for label, value in HOSTILE.items():
                args = [*name.split(), *_line(command, param, value, tmp_path)]
                case = f"{name} {param.name}={label}"
                signal.alarm(CASE_SECONDS)
                try:
                    result = runner.invoke(group, args, input="{}", env={"ORG_AGENT": "bot"})
                except _Timeout:
                    problems.append(f"{case}: hang (no answer within {CASE_SECONDS} s)")
                    continue
                finally:
                    signal.alarm(0)
                problems += _judge(case, result, name, _must_refuse(name, param, value))
    finally:
        signal.signal(signal.SIGALRM, previous)
    return problems


def _judge(case: str, result, name: str, refuse: bool) -> list[str]:
    code, out, err = result.exit_code, result.stdout, result.stderr
    if isinstance(result.exception, _Timeout):
        return [f"{case}: hang (no answer within {CASE_SECONDS} s)"]
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return [f"{case}: traceback {type(result.exception).__name__}: {str(result.exception)[:120]}"]
    if "Traceback" in out + err:
        return [f"{case}: traceback in the output"]
    if name == "hook":
        return [] if code == 0 else [f"{case}: the hook exited {code}, not 0 (hooks fail open)"]
    if code not in (0, 1, 2):
        return [f"{case}: exit code {code}"]
    if refuse and code != 2:
        return [f"{case}: exit {code}, not 2 (a usage error): {err.strip()[:160]!r}"]
    if code and len(err.strip().splitlines()) != 1:
        return [f"{case}: exit {code} with {len(err.strip().splitlines())} lines on stderr: {err[:160]!r}"]
    if code and RAW_SQL.search(err):
        return [f"{case}: a raw database error: {err.strip()[:160]!r}"]
    return []


def _all_commands():
    from cli_org.faces.cli import cli as group

    return list(commands(group))


@pytest.mark.attack("fuzz")
@pytest.mark.parametrize("name", [n for n, _ in _all_commands()])
def test_every_command_with_hostile_arguments(org, monkeypatch, tmp_path, name):
    command = dict(_all_commands())[name]
    problems = fuzz_command(org, monkeypatch, tmp_path, name, command)
    report = os.environ.get("CLI_ORG_FUZZ_REPORT")
    if report:  # the counts for the issue: cases run and problems by kind
        cases = sum(len(HOSTILE) for p in command.params if not (isinstance(p, click.Option) and p.is_flag))
        with open(report, "a") as f:
            f.write(json.dumps({"command": name, "cases": cases, "problems": problems}) + "\n")
    assert not problems, "\n".join(problems)


# --- every MCP tool, with hostile arguments -------------------------------------------------------
#
# One server process (as bot) takes every tool with one argument at a time hostile, the rest at
# ordinary values: each call comes back within CASE_SECONDS as a result (a tool error is fine), never
# an unexpected error or a raw database error; the server is still serving at the end and wrote
# no traceback to its stderr.

MCP_HOSTILE = {
    "bigint+1": 2**63,
    "-bigint-1": -(2**63) - 1,
    "2**100": 2**100,
    "negative": -1,
    "zero": 0,
    "float": 1e308,
    "empty": "",
    "10 KB": "x" * 10_000,
    "NUL": "a\x00b",
    "newline": "a\nb",
    "null": None,
    "list": [1, [2, [3]]],
    "object": {"agent": "boss"},
    "true": True,
}


def _mcp_ordinary(schema: dict):
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type") or next((s.get("type") for s in schema.get("anyOf", []) if s.get("type") != "null"), None)
    if kind == "integer":
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    return "deploy"


@pytest.mark.attack("fuzz")
def test_every_mcp_tool_with_hostile_arguments(org, tmp_path):
    import anyio
    from mcp import ClientSession, stdio_client

    from tests.helpers import params, text

    errlog = tmp_path / "server.err"
    problems: list[str] = []
    cases = 0

    async def main():
        nonlocal cases
        with open(errlog, "w") as err:
            async with (
                stdio_client(params(org, "bot"), errlog=err) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                for tool in (await session.list_tools()).tools:
                    props = tool.input_schema.get("properties", {})
                    required = tool.input_schema.get("required", [])
                    for name in props:
                        for label, value in MCP_HOSTILE.items():
                            args = {k: ORDINARY.get(k) or _mcp_ordinary(props[k]) for k in required}
                            args[name] = value
                            case = f"{tool.name} {name}={label}"
                            cases += 1
                            try:
                                with anyio.fail_after(CASE_SECONDS):
                                    result = await session.call_tool(tool.name, args)
                            except TimeoutError:
                                problems.append(f"{case}: no answer within {CASE_SECONDS} s")
                                continue
                            said = text(result)
                            if result.is_error and "unexpected error" in said:
                                problems.append(f"{case}: {said[:160]}")
                            elif result.is_error and RAW_SQL.search(said):
                                problems.append(f"{case}: a raw database error: {said[:160]}")
                assert {t.name for t in (await session.list_tools()).tools}, "the server stopped serving"

    anyio.run(main)
    stderr = errlog.read_text()
    if "Traceback" in stderr:
        problems.append("the server's stderr has a traceback: " + stderr[stderr.index("Traceback") :][:400])
    report = os.environ.get("CLI_ORG_FUZZ_REPORT")
    if report:
        with open(report, "a") as f:
            f.write(json.dumps({"command": "mcp tools", "cases": cases, "problems": problems}) + "\n")
    assert not problems, "\n".join(problems)


# The cases the issue names, each on its own (the fuzz above finds their whole class).
NAMED = {
    "fact id past bigint": (["forget", str(2**63), "wrong"], 2, "1<=x<=9223372036854775807"),
    "fact id of 40 digits": (["facts", "show", "9" * 40], 2, "1<=x<=9223372036854775807"),
    "todo id past bigint": (["todo", "done", str(2**63)], 2, "1<=x<=9223372036854775807"),
    "supersedes past bigint": (
        ["remember", "deploy", ORDINARY["claim"], "--source", "docs/fuzz.md", "--supersedes", str(2**63)],
        2,
        "1<=x<=9223372036854775807",
    ),
    "--as with a space": (["facts", "--as", "x y"], 2, "not an agent name"),
    "agents add with a bad name": (["agents", "add", "Bad Name!"], 2, "not an agent name"),
    "--arms not an arm": (["recall", "deploy", "--arms", "fact,bogus"], 2, "--arms"),
    "warm serve --idle nan": (["warm", "serve", "--idle", "nan"], 2, "nan is not a number"),
    "eval golden --min-hit nan": (["eval", "golden", "golden.txt", "--min-hit", "nan"], 2, "nan is not a number"),
    "archive history, a long name": (["archive", "history", "x" * 10_000], 1, "no archived versions of xxx"),
    "import, a 5,000-deep line": (["import", "deep.jsonl"], 1, "line 1: nested too deeply"),
}


@pytest.mark.attack("fuzz")
@pytest.mark.parametrize("case", list(NAMED))
def test_the_issues_examples_are_one_clear_line(org, monkeypatch, tmp_path, case):
    from cli_org.faces.cli import cli as group

    args, code, says = NAMED[case]
    for key, value in org.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "golden.txt").write_text("how do deploys run|deploy.sh\n")
    (tmp_path / "deep.jsonl").write_text("[" * 5000 + "]" * 5000 + "\n")
    warm_serve = group.commands["warm"].commands["serve"]
    monkeypatch.setattr(warm_serve, "callback", lambda **kwargs: pytest.fail("warm serve ran with --idle nan"))
    result = CliRunner().invoke(group, args, env={"ORG_AGENT": "bot"})
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert (result.exit_code, len(result.stderr.splitlines())) == (code, 1), result.stderr
    assert says in result.stderr and "Traceback" not in result.output


def test_mcp_ids_past_bigint_are_refused_by_the_schema(org):
    """The tools' schemas carry the bound a model reads (rules.MAX_ID), and the refusal is clean."""
    from tests.helpers import serve, text

    async def script(s):
        tools = {t.name: t for t in (await s.list_tools()).tools}
        forgot = await s.call_tool("org_forget", {"id": 2**63, "why": "wrong"})
        return tools, forgot

    tools, forgot = serve(org, script)
    assert tools["org_forget"].input_schema["properties"]["id"]["maximum"] == 2**63 - 1
    assert forgot.is_error and "less than or equal to 9223372036854775807" in text(forgot)
    assert "numeric" not in text(forgot)


@pytest.mark.attack("fuzz")
@pytest.mark.parametrize("call", ["forget", "restore", "show_fact", "pin", "unpin", "done_todo", "supersedes"])
def test_the_library_refuses_ids_past_bigint_in_one_line(org, call):
    """A member logged in with her own password calls the library with an id no bigint holds:
    one InputError naming the bound, never the database's words about numeric functions."""
    from cli_org.errors import InputError
    from cli_org.store import facts, pins, todos

    big = 2**63
    calls = {
        "forget": lambda c: facts.forget(c, big, "wrong"),
        "restore": lambda c: facts.restore(c, big, "back"),
        "show_fact": lambda c: facts.show_fact(c, big),
        "pin": lambda c: pins.pin(c, big),
        "unpin": lambda c: pins.unpin(c, big),
        "done_todo": lambda c: todos.done_todo(c, big),
        "supersedes": lambda c: facts.remember(c, "deploy", ORDINARY["claim"], source="docs/fuzz.md", supersedes=big),
    }
    with (
        org.login(f"{org.name}_bot", "bot-pw") as conn,
        pytest.raises(InputError, match=r"ids are whole numbers from 1 to 9223372036854775807"),
    ):
        calls[call](conn)
