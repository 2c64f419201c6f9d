"""Issue 35: lasting lessons found in a session (cli_org/archive/lessons.py).

Each kind of lesson is found in a small session written here; each kind of plain work (a typo,
a rename, a one-off correction, a question, a test fixed within the task, tool output, code,
logs, the harnesses' own text) proposes nothing; claims are bounded; a tool result's failure is
read from what each harness stores (imported into the real archive and read back); a hostile
transcript path is refused or read from its tail, never hangs; and the real model decides with
the trained weights."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from cli_org.archive import lessons
from cli_org.archive.importer import import_sessions
from cli_org.archive.lessons import MAX_CLAIM, Lesson, Turn, turns_from_claude_transcript, turns_from_rows
from cli_org.checks.rules import PROPOSAL_KINDS
from cli_org.errors import InputError
from cli_org.vault.embedders import model_file, query_model


def session(*said: tuple[str, str]) -> list[Turn]:
    """Turns from (kind, text) pairs; each user message after an agent's edit, as in real work."""
    turns: list[Turn] = []
    for n, (kind, text) in enumerate(said):
        if kind == "user" and turns:
            turns.append(Turn(f"e{n}", "assistant", "", tool_name="Edit"))
            turns.append(Turn(f"r{n}", "tool", "The file has been updated.", failed=False))
        turns.append(Turn(f"k{n}", kind, text))
    return turns


def shell(key: str, command: str, output: str, failed: bool) -> list[Turn]:
    return [Turn(f"{key}c", "assistant", command, "Bash", command), Turn(key, "tool", output, "Bash", command, failed)]


def found(turns: list[Turn], embedder=None) -> list[Lesson]:
    return lessons.lessons(turns, embedder)


# --- each kind of lesson ------------------------------------------------------------------------

KIND_CASES = [
    (
        "rule",
        "correction",
        "no, in this repo we always use pnpm, never npm",
        "In this repo we always use pnpm, never npm.",
    ),
    ("workflow", "rule", "from now on run make lint before every commit", "Run make lint before every commit."),
    ("decision", "decision", "keep the v1 routes until March, partners still call them", "Keep the v1 routes"),
    ("fact", "remember-that", "remember that the staging deploy needs the VPN", "The staging deploy needs the VPN."),
    ("preference", "preference", "I prefer small focused commits over one big commit", "I prefer small focused"),
    ("fact", "correction", "the test database is on 5433, not 5432", "The test database is on 5433, not 5432."),
]


@pytest.mark.parametrize(("kind", "why", "said", "claim"), KIND_CASES)
def test_each_kind_of_lesson_is_found_without_the_model(kind, why, said, claim):
    turns = session(("user", "add a health check endpoint"), ("assistant", "Added GET /health."), ("user", said))
    [lesson] = found(turns)
    assert (lesson.kind, lesson.why, lesson.key) == (kind, why, turns[-1].key)
    assert lesson.claim.startswith(claim)
    assert 0 < lesson.score <= 1 and lesson.subject and len(lesson.subject) <= 48


def test_a_failure_then_the_changed_command_that_worked_is_a_lesson():
    turns = [
        Turn("u1", "user", "load the fixtures into the test database"),
        *shell(
            "t1",
            "psql -h localhost -p 5432 -U app -f fixtures.sql",
            'psql: error: connection to server at "localhost", port 5432 failed: Connection refused',
            True,
        ),
        *shell("t2", "psql -h localhost -p 5433 -U app -f fixtures.sql", "INSERT 0 12", False),
        Turn("a9", "assistant", "Loaded; the test database listens on 5433."),
    ]
    [lesson] = found(turns)
    assert (lesson.kind, lesson.why, lesson.key, lesson.subject) == ("failure", "failure-fix", "t2", "psql")
    assert "-p 5433" in lesson.claim and "-p 5432" in lesson.claim and "Connection refused" in lesson.claim


def test_every_kind_is_one_of_kinds():
    turns = session(*[("user", c[2]) for c in KIND_CASES])
    assert {lesson.kind for lesson in found(turns)} <= set(PROPOSAL_KINDS)


# --- plain work proposes nothing -----------------------------------------------------------------

PLAIN = {
    "typo": ["fix the typo in the README, it says recieve", "typo in the error message: occured"],
    "rename": ["rename getUser to fetchUser everywhere", "call it OrderSummary instead of Summary"],
    "one-off": ["no, the other file too", "not that one, the second function", "no, make it a bit darker"],
    "question": ["what does this function do?", "should we always pass the tenant id here?"],
    "thanks": ["thanks, looks good", "ok continue", "lgtm, ship it"],
    "task": ["add a --verbose flag to the CLI", "Write a function that returns the total per customer."],
    "observation": ["it always crashes when I click save", "the page never loads on Safari"],
}


@pytest.mark.parametrize("sort", sorted(PLAIN))
def test_plain_work_proposes_nothing(sort):
    turns = session(*[("user", text) for text in PLAIN[sort]])
    assert found(turns) == []


def test_a_failing_test_fixed_within_the_task_proposes_nothing():
    turns = [
        Turn("u1", "user", "make test_totals pass"),
        *shell("t1", "pytest tests/test_totals.py", "E   AssertionError: assert 41 == 42\n1 failed", True),
        Turn("e1", "assistant", "", "Edit"),
        Turn("e1r", "tool", "The file has been updated.", "Edit", None, False),
        *shell("t2", "pytest tests/test_totals.py", "1 passed", False),
        *shell("t3", "pytest tests/test_other.py::test_x", "ModuleNotFoundError: No module named 'x'", True),
        *shell("t4", "pytest tests/test_other.py", "3 passed", False),
        *shell("t5", "ls src/missing", "ls: cannot access 'src/missing': No such file or directory", True),
        *shell("t6", "ls src", "app.py", False),
    ]
    assert found(turns) == []


def test_lessons_only_come_from_the_persons_own_words():
    rule = "From now on always use pnpm, never npm, in this repo."
    turns = [
        Turn("a1", "assistant", f"Noted. {rule}"),  # the agent saying it
        Turn("t1", "tool", f"README.md: {rule}", "Read", None, False),  # a file the agent read
        Turn("s1", "system", rule),
        Turn("u1", "user", f"```\n# {rule}\nnpm install\n```"),  # pasted code
        Turn("u2", "user", f"    {rule}\n    at Object.<anonymous> (index.js:1:1)"),  # an indented paste
    ]
    assert found(turns) == []


BOILERPLATE = [
    "<command-name>/model</command-name>\n<command-message>model</command-message>\n<command-args></command-args>",
    "<local-command-stdout>From now on the model is always Default</local-command-stdout>",
    "<local-command-caveat>Caveat: The messages below were generated by the user while running local commands."
    " DO NOT respond to these messages.</local-command-caveat>",
    "<system-reminder>Always use the TodoWrite tool. Never skip it.</system-reminder>",
    "Caveat: The messages below were generated by the user while running local commands.",
    "[Request interrupted by user for tool use]",
    "This session is being continued from a previous conversation. We always use pnpm in this repo.",
    "<environment_context>\n  <cwd>/w/app</cwd>\n  <approval_policy>never</approval_policy>\n</environment_context>",
    "# AGENTS.md instructions for /w/app\n\n<INSTRUCTIONS>\nAlways run make lint before every commit.\n</INSTRUCTIONS>",
    "<user_instructions>\nNever push to main; from now on always open a PR.\n</user_instructions>",
    "You just executed tool calls but returned an empty response. Please process the tool results above.",
    "<task-notification><summary>Background command always runs (exit code 0)</summary></task-notification>",
]


@pytest.mark.parametrize("text", BOILERPLATE)
def test_the_harness_own_text_proposes_nothing(text):
    assert found([Turn("a0", "assistant", "done", "Bash"), Turn("u1", "user", text)]) == []


def test_the_opening_task_and_long_specs_hold_no_candidate_without_a_strong_cue():
    weak = "Only stage the files you changed."
    assert lessons.candidates(session(("user", "set up the repo"), ("user", weak)))  # a correction: the model judges
    assert lessons.candidates([Turn("u1", "user", weak)]) == []  # the session's opening task
    spec = "Build the export. " + " ".join(f"Step {n}: handle case {n}." for n in range(5)) + " " + weak
    assert lessons.candidates(session(("user", "go"), ("user", spec))) == []
    strong = "From now on only stage the files you changed."
    assert [c.why for c in lessons.candidates([Turn("u1", "user", strong)])] == ["rule"]


def test_the_answer_to_the_agents_question_needs_a_strong_cue():
    asked = [Turn("a1", "assistant", "Shall I commit everything in the folder?")]
    weak = "Only stage the files you changed."
    assert lessons.candidates([*asked, Turn("u1", "user", weak)]) == []  # a question answered
    told = [Turn("a1", "assistant", "Committed everything in the folder.")]
    assert lessons.candidates([*told, Turn("u1", "user", weak)])
    strong = "No. From now on only stage the files you changed."
    assert [c.why for c in lessons.candidates([*asked, Turn("u1", "user", strong)])] == ["correction"]


def test_a_list_item_is_read_from_its_first_word():
    spec = "1) i want the notebook to act as a shared hub for the project plan"
    assert lessons.candidates(session(("user", "go"), ("user", spec))) == []  # "i want the ...": the task


@pytest.mark.parametrize(
    "text",
    [
        "are there any files that are superfluous and should move into backup",  # a question without its mark
        "The files are likely in the .git folder, you'll have to search to confirm.",  # hedged
        "I need you to survey this repository and list what exists in it.",  # the task
        "It does not need to be portable for other projects.",  # about the thing being made
        "Actually, I can do the add, commit and push, and that should take care of it.",  # the person's own plan
        "Before we start, create a .env so that you can test the code.",  # a step of the task
    ],
)
def test_questions_hedges_and_tasks_hold_no_candidate(text):
    assert lessons.candidates(session(("user", "go"), ("user", text))) == []


def test_the_lasting_part_of_a_sentence_is_the_claim():
    turns = session(
        ("user", "go"),
        ("user", "that looks good, but keep in mind I often run two sessions in one folder"),
        ("user", "yep, do it in that order. Remember to be concise, EVALUATION.md is max half a page."),
    )
    assert sorted(lesson.claim for lesson in found(turns)) == [
        "Be concise, EVALUATION.md is max half a page.",
        "I often run two sessions in one folder.",
    ]


def test_pasted_logs_propose_nothing():
    log = (
        "2026-11-01 10:00:01 ERROR never retrying, always failing: connection refused\n"
        "Traceback (most recent call last):\n"
        '  File "app.py", line 3, in <module>\n'
        "ModuleNotFoundError: No module named 'yaml'\n"
        "npm ERR! code ERESOLVE\n"
    )
    assert found(session(("user", log))) == []


# --- claims ----------------------------------------------------------------------------------------


def test_claims_are_bounded_and_lose_their_lead_in():
    long_rule = "from now on never use the " + "very " * 100 + "old client in this repo"
    turns = session(("user", long_rule), ("user", "No, remember that the queue is on 6380, not 6379."))
    claims = sorted(lesson.claim for lesson in found(turns))
    assert all(len(c) <= MAX_CLAIM for c in claims)
    assert claims[0].startswith("Never use the very very") and claims[0].endswith("…")
    assert claims[1] == "The queue is on 6380, not 6379."


def test_one_session_proposes_at_most_its_best_few():
    turns = session(*[("user", f"in this repo we always use tool{n}, never tool{n + 100}") for n in range(30)])
    assert len(found(turns)) == lessons.MAX_PER_SESSION


# --- turns from the archive's rows: failure as each harness stores it -------------------------


def _claude_lines() -> str:
    def line(uuid, role, content):
        record = {"type": role, "sessionId": "c-1", "uuid": uuid, "cwd": "/w/app", "timestamp": "2026-11-01T10:00:00Z"}
        return json.dumps(record | {"message": {"role": role, "content": content}}) + "\n"

    call = {"type": "tool_use", "id": "tu1", "name": "Bash", "input": {"command": "psql -p 5432 -f seed.sql"}}
    call2 = {"type": "tool_use", "id": "tu2", "name": "Bash", "input": {"command": "psql -p 5433 -f seed.sql"}}
    bad = {"type": "tool_result", "tool_use_id": "tu1", "is_error": True, "content": "psql: error: Connection refused"}
    good = {"type": "tool_result", "tool_use_id": "tu2", "is_error": False, "content": "INSERT 0 3"}
    return (
        line("u1", "user", "seed the test database")
        + line("a1", "assistant", [{"type": "text", "text": "Seeding."}, call])  # the call is part 1: raw part_of
        + line("r1", "user", [bad])
        + line("a2", "assistant", [call2])
        + line("r2", "user", [good])
    )


def _codex_lines() -> str:
    sid = "019c0000-0000-7000-8000-0000000000aa"
    items = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "run the build"}]},
        {
            "type": "function_call",
            "name": "exec_command",
            "arguments": json.dumps({"cmd": "make build"}),
            "call_id": "x1",
        },
        {
            "type": "function_call_output",
            "call_id": "x1",
            "output": "Exit code: 2\nWall time: 0.1 seconds\nOutput:\nmake: *** no rule",
        },
        {
            "type": "function_call",
            "name": "shell",
            "arguments": json.dumps({"command": ["bash", "-lc", "make all"]}),
            "call_id": "x2",
        },
        {
            "type": "function_call_output",
            "call_id": "x2",
            "output": json.dumps({"output": "ok", "metadata": {"exit_code": 0}}),
        },
        {"type": "function_call", "name": "shell", "arguments": json.dumps({"command": ["ls"]}), "call_id": "x3"},
        {
            "type": "function_call_output",
            "call_id": "x3",
            "output": json.dumps({"output": "", "metadata": {"exit_code": 1}}),
        },
    ]
    lines = [{"timestamp": "2026-11-01T10:00:00Z", "type": "session_meta", "payload": {"id": sid, "cwd": "/w/app"}}]
    lines += [{"timestamp": "2026-11-01T10:00:01Z", "type": "response_item", "payload": item} for item in items]
    return "".join(json.dumps(line) + "\n" for line in lines)


def _hermes_store(path: Path) -> None:
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, model TEXT, parent_session_id TEXT, started_at REAL);"
        "CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT, role TEXT, content TEXT,"
        " tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, timestamp REAL);"
        "INSERT INTO sessions VALUES ('h-1', 'm', NULL, 1780000000);"
    )

    def call(call_id, command):
        return {
            "id": call_id,
            "type": "function",
            "function": {"name": "terminal", "arguments": json.dumps({"command": command})},
        }

    rows = [
        ("user", "start the app", None, None, None),
        ("assistant", "", None, json.dumps([call("k1", "npm start"), call("k2", "pnpm start")]), None),
        (
            "tool",
            json.dumps({"output": "sh: npm: command not found", "exit_code": 127, "error": None}),
            "k1",
            None,
            "terminal",
        ),
        ("tool", json.dumps({"output": "ready on :3000", "exit_code": 0, "error": None}), "k2", None, "terminal"),
        ("tool", json.dumps({"content": "", "error": "File not found: notes.txt"}), None, None, "read_file"),
        ("tool", json.dumps({"total_count": 0}), None, None, "search_files"),
    ]
    for n, (role, content, call_id, calls, tool) in enumerate(rows):
        db.execute(
            "INSERT INTO messages VALUES (NULL, 'h-1', ?, ?, ?, ?, ?, ?)",
            (role, content, call_id, calls, tool, 1780000001 + n),
        )
    db.commit()
    db.close()


def _rows(org, harness: str) -> list[dict]:
    with org.admin() as conn:
        return conn.execute(
            "SELECT m.source_key, m.kind, m.text, m.tool_name, m.command, m.raw, m.tool_call_id FROM archive_messages m"
            " JOIN archive_sessions s ON s.id = m.session_id WHERE s.harness = %s ORDER BY m.position, m.part",
            (harness,),
        ).fetchall()


def test_turns_from_the_archive_rows_read_each_harness_failure(org, tmp_path):
    claude_dir = tmp_path / "claude" / "-w-app"
    claude_dir.mkdir(parents=True)
    (claude_dir / "c-1.jsonl").write_text(_claude_lines())
    codex_dir = tmp_path / "codex" / "2026" / "11" / "01"
    codex_dir.mkdir(parents=True)
    (codex_dir / "rollout-2026-11-01T10-00-00-019c0000-0000-7000-8000-0000000000aa.jsonl").write_text(_codex_lines())
    _hermes_store(tmp_path / "state.db")
    stores = {"claude-code": tmp_path / "claude", "codex": tmp_path / "codex", "hermes": tmp_path / "state.db"}
    with org.admin() as conn:
        import_sessions(conn, stores)

    claude_turns = turns_from_rows(_rows(org, "claude-code"))
    results = [(t.command, t.failed) for t in claude_turns if t.kind == "tool"]
    assert results == [("psql -p 5432 -f seed.sql", True), ("psql -p 5433 -f seed.sql", False)]
    [lesson] = lessons.lessons(claude_turns)
    assert lesson.why == "failure-fix" and "-p 5433" in lesson.claim

    codex_turns = turns_from_rows(_rows(org, "codex"))
    assert [(t.command, t.failed) for t in codex_turns if t.kind == "tool"] == [
        ("make build", True),
        ("make all", False),
        ("ls", True),
    ]

    hermes_turns = turns_from_rows(_rows(org, "hermes"))
    assert [(t.tool_name, t.command, t.failed) for t in hermes_turns if t.kind == "tool"] == [
        ("terminal", "npm start", True),
        ("terminal", "pnpm start", False),
        ("read_file", None, True),
        ("search_files", None, None),
    ]
    assert [t.text for t in hermes_turns if t.kind == "user"] == ["start the app"]


def test_turns_from_rows_takes_odd_rows_without_failing():
    rows = [
        {"source_key": "x", "kind": "tool", "text": None, "raw": None},
        {"source_key": "y", "kind": "tool", "text": "{not json", "raw": {"role": "tool"}},
        {"source_key": "z#1", "kind": "tool", "text": "t", "raw": {"part_of": "missing"}},
        {"kind": "user", "text": 42, "raw": []},
    ]
    turns = turns_from_rows(rows)
    assert [(t.key, t.kind, t.text, t.failed) for t in turns] == [
        ("x", "tool", "", None),
        ("y", "tool", "{not json", None),
        ("z#1", "tool", "t", None),
        ("", "user", "", None),
    ]


# --- a Claude Code transcript from the Stop hook's path ------------------------------------------


def _line(uuid: str, role: str, content) -> str:
    record = {"type": role, "sessionId": "s-9", "uuid": uuid, "timestamp": "2026-11-01T10:00:00Z"}
    return json.dumps(record | {"message": {"role": role, "content": content}}) + "\n"


def test_the_last_turn_of_a_transcript_is_read(tmp_path):
    path = tmp_path / "s-9.jsonl"
    path.write_text(
        _line("u1", "user", "no, in this repo we always use pnpm, never npm")
        + _line("a1", "assistant", [{"type": "text", "text": "Switched to pnpm."}])
        + "{this line is not json\n"
        + "[1, 2]\n"
        + _line("u2", "user", "from now on run make lint before every commit")
        + _line("a2", "assistant", [{"type": "text", "text": "Ran make lint."}])
    )
    last = turns_from_claude_transcript(path, last_turn_only=True)
    assert [t.key for t in last] == ["a1", "u2", "a2"]
    assert [lesson.claim for lesson in lessons.lessons(last)] == ["Run make lint before every commit."]
    every = turns_from_claude_transcript(path, last_turn_only=False)
    assert len(lessons.lessons(every)) == 2


def test_a_huge_transcript_is_read_from_its_tail_only(tmp_path):
    path = tmp_path / "big.jsonl"
    filler = _line("f", "assistant", [{"type": "text", "text": "x" * 10_000}])
    with path.open("w") as fh:
        fh.write(_line("u0", "user", "remember that the old queue is on 6380, not 6379"))
        fh.write(filler * (50_000_000 // len(filler) + 1))
        fh.write(_line("u1", "user", "remember that the cache is on 6390, not 6391"))
    assert path.stat().st_size > 50_000_000
    turns = turns_from_claude_transcript(path, last_turn_only=False)
    assert "u0" not in {t.key for t in turns}
    assert [lesson.key for lesson in lessons.lessons(turns)] == ["u1"]


def test_hostile_transcript_paths_are_refused(tmp_path):
    zero = tmp_path / "zero.jsonl"
    zero.symlink_to("/dev/zero")
    folder = tmp_path / "folder.jsonl"
    folder.mkdir()
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    for path in (zero, folder, fifo, tmp_path / "missing.jsonl"):
        with pytest.raises(InputError):
            turns_from_claude_transcript(path, last_turn_only=True)


def test_a_transcript_of_garbage_gives_no_turns(tmp_path):
    path = tmp_path / "junk.jsonl"
    path.write_bytes(b"\xff\xfe\x00garbage\n" + b"[" * 5000 + b"\n" + b'{"type": "user"}\n' + b"\n\n")
    assert turns_from_claude_transcript(path, last_turn_only=True) == []
    assert turns_from_claude_transcript(path, last_turn_only=False) == []


# --- the real model --------------------------------------------------------------------------------


def test_the_real_model_finds_lessons_and_passes_plain_work():
    """The query model the session built (tests/conftest.py) and the shipped weights."""
    model = model_file(Path(os.environ["CLI_ORG_DATA_DIR"]))  # the session's own data folder
    embedder = query_model(model)
    assert embedder is not None, "the query model was not built for the session"
    assert lessons.WEIGHTS.exists()
    turns = session(
        ("user", "add a retry to the webhook sender"),  # the opening task: only strong cues count there
        ("user", "no, don't use requests, this project uses httpx everywhere"),
        ("user", "the redis in docker-compose is on 6380 because 6379 clashes with the host one"),
        ("user", "no, the other file too"),
        ("user", "fix the typo in the footer"),
        ("user", "it always hangs when I upload a big file"),
        ("user", "thanks, commit it"),
    )
    said = lessons.lessons(turns, embedder)
    assert {lesson.key for lesson in said} == {"k1", "k2"}  # the two lessons, nothing else
    assert all(0 <= lesson.score <= 1 and len(lesson.claim) <= MAX_CLAIM for lesson in said)
    # The rules alone find neither: they need a strong cue; the model judges the weak ones.
    assert lessons.lessons(turns) == []
