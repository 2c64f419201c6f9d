"""Adversarial input: one bad line, file, note or argument never aborts or hangs a whole job."""

import json
import os
import resource
import sqlite3
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import psycopg
import pytest
from psycopg import sql as pgsql

from cli_org.archive.importer import import_sessions
from cli_org.config import Settings
from cli_org.db.connect import connect
from cli_org.errors import ConfigError, InputError
from cli_org.evaluation import parse_golden, parse_queries
from cli_org.vault.scan import MAX_FILE_BYTES, scan

WORKTREE = Path(__file__).resolve().parents[1]


def _claude(uuid: str, text: str, session: str = "s-1", **extra) -> str:
    record = {
        "type": "user",
        "sessionId": session,
        "uuid": uuid,
        "cwd": "/home/u/proj",
        "timestamp": "2026-11-01T10:00:00Z",
        "message": {"role": "user", "content": text},
        **extra,
    }
    return json.dumps(record) + "\n"


def _import(org, **stores):
    with org.admin() as conn:
        return {s.harness: s for s in import_sessions(conn, {k.replace("_", "-"): v for k, v in stores.items()})}


def _texts(org) -> list[str]:
    with org.admin() as conn:
        return [r["text"] for r in conn.execute("SELECT text FROM archive_messages ORDER BY text")]


# Each of these once aborted the import of every later file.
BAD_CLAUDE_LINES = {
    "cwd is a number": _claude("b1", "x", cwd=123),
    "deeply nested": '{"type": "user", "sessionId": "s", "message": ' + "[" * 100_000 + "]" * 100_000 + "}\n",
    "lone surrogate": _claude("b3", "x").replace('"x"', '"bad \\ud800 text"'),
    "dict for a string": _claude("b4", "x", gitBranch={"not": "a string"}),
    "NaN timestamp": _claude("b5", "x").replace('"2026-11-01T10:00:00Z"', "NaN"),
    "dict as session id": _claude("b6", "x", session={"id": 1}),
    "infinite number inside": _claude("b7", "x", toolUseResult={"n": 1e999}),
}


@pytest.mark.slow
def test_bad_claude_lines_are_skipped_and_counted_and_later_files_import(org, tmp_path):
    root = tmp_path / "projects"
    folder = root / "-w"
    folder.mkdir(parents=True)
    for n, line in enumerate(BAD_CLAUDE_LINES.values()):
        (folder / f"a{n}.jsonl").write_text(
            _claude(f"g{n}", f"good before {n}") + line + _claude(f"h{n}", f"after {n}")
        )
    (folder / "z-last.jsonl").write_text(_claude("z", "the last file"))
    summary = _import(org, claude_code=root)["claude-code"]
    assert summary.failed == []
    texts = _texts(org)
    assert "the last file" in texts
    for n in range(len(BAD_CLAUDE_LINES)):
        assert f"good before {n}" in texts and f"after {n}" in texts
    # The surrogate line, the NaN and the infinity are kept with the bad values replaced;
    # the rest are skipped, each with its reason.
    assert "bad \ufffd text" in texts
    assert summary.malformed == 4
    assert sum(summary.skipped.values()) == 4
    assert any("nested" in reason for reason in summary.skipped)
    assert any("cwd" in reason for reason in summary.skipped)
    with org.admin() as conn:
        raw = conn.execute("SELECT raw FROM archive_messages WHERE raw->>'uuid' = 'b7'").fetchone()["raw"]
    assert raw["toolUseResult"] == {"n": None}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(BAD_CLAUDE_LINES))
def test_each_bad_line_alone_leaves_the_next_file_imported(org, tmp_path, name):
    folder = tmp_path / "projects" / "-w"
    folder.mkdir(parents=True)
    (folder / "a.jsonl").write_text(BAD_CLAUDE_LINES[name])
    (folder / "b.jsonl").write_text(_claude("b", "next file"))
    summary = _import(org, claude_code=tmp_path / "projects")["claude-code"]
    assert summary.failed == [] and "next file" in _texts(org)


@pytest.mark.slow
def test_bad_codex_lines_are_skipped(org, tmp_path):
    root = tmp_path / "sessions"
    root.mkdir()
    good = {"timestamp": "2026-11-01T10:00:00Z", "type": "response_item"}
    lines = [
        {**good, "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "one"}]}},
        {**good, "type": "session_meta", "payload": {"id": "x", "cwd": ["not", "a", "string"]}},
        {**good, "type": "turn_context", "payload": {"model": {"name": 1}, "cwd": "/w"}},
        {**good, "payload": {"type": "function_call", "name": {"n": 1}, "arguments": "{}", "call_id": "c"}},
        {**good, "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "two"}]}},
    ]
    text = "".join(json.dumps(x) + "\n" for x in lines)
    text += '{"type": "response_item", "payload": ' + "{" * 5000 + "\n"
    (root / "rollout-2026-11-01T10-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl").write_text(text)
    summary = _import(org, codex=root)["codex"]
    assert summary.failed == [] and summary.malformed == 4
    assert _texts(org) == ["one", "two"]


@pytest.mark.slow
def test_bad_hermes_rows_are_skipped(org, tmp_path):
    path = tmp_path / "state.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE sessions (id TEXT, parent_session_id TEXT, cwd, model, title, started_at, ended_at)")
    db.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id, role, content, tool_calls, timestamp)")
    db.execute("INSERT INTO sessions VALUES ('a', NULL, 42, 'm', 'ok', 1780000000, NULL)")
    db.execute("INSERT INTO messages VALUES (1, 'a', 'user', 'fine', NULL, 1780000001)")
    db.execute("INSERT INTO messages VALUES (2, 'a', 'user', x'ff00fe', NULL, 1780000002)")
    db.execute("INSERT INTO messages VALUES (3, 'a', 'user', CAST(x'61ff62' AS TEXT), NULL, 1780000003)")
    db.execute("INSERT INTO messages VALUES (4, 'a', 'assistant', 'calls', ?, 'nan')", ("[" * 10000,))
    db.execute("INSERT INTO messages VALUES (5, 'a', 'user', 'last', NULL, 1780000005)")
    db.commit()
    db.close()
    summary = _import(org, hermes=path)["hermes"]
    assert summary.failed == []
    texts = _texts(org)
    assert "fine" in texts and "last" in texts and "calls" in texts and "a\ufffdb" in texts


@pytest.mark.slow
def test_bad_file_is_named_and_the_import_goes_on(org, tmp_path):
    root = tmp_path / "projects" / "-w"
    root.mkdir(parents=True)
    (root / "a.jsonl").write_text(_claude("a", "first file"))
    (root / "b.jsonl").mkdir()  # rglob finds it, but it cannot be read as a file
    (root / "c.jsonl").symlink_to(tmp_path / "gone.jsonl")
    (root / "d.jsonl").write_text(_claude("d", "last file"))
    hermes = tmp_path / "state.db"
    hermes.write_bytes(b"not a sqlite database at all" * 100)
    summaries = _import(org, hermes=hermes, claude_code=tmp_path / "projects")  # the bad store first
    assert sorted(_texts(org)) == ["first file", "last file"]
    assert summaries["hermes"].failed and str(hermes) in summaries["hermes"].failed[0]


@pytest.mark.slow
def test_cli_import_reports_skipped_lines_and_failed_files(cli, tmp_path):
    root = tmp_path / "projects" / "-w"
    root.mkdir(parents=True)
    (root / "a.jsonl").write_text(_claude("a", "ok") + "{broken\n" + BAD_CLAUDE_LINES["cwd is a number"])
    hermes = tmp_path / "state.db"
    hermes.write_bytes(b"garbage" * 100)
    code, out, err = cli("archive", "import", "--claude", str(tmp_path / "projects"), "--hermes", str(hermes))
    assert code == 1, (out, err)
    assert "2 malformed lines skipped (" in out and "not JSON: 1" in out
    assert f"hermes: {hermes}" in err and "Traceback" not in err
    data = json.loads(cli("archive", "import", "--hermes", str(hermes), "--json")[1])
    assert data["imported"][0]["failed"] and data["imported"][0]["failed"][0].startswith(str(hermes))


# --- vault scan ----------------------------------------------------------------------------


def _note(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _good_notes(root: Path, n: int = 3) -> None:
    for i in range(n):
        _note(root, f"good/n{i}.md", f"# Good {i}\n\nplain note number {i} about walruses\n")


def _scan(org, root: Path):
    with connect(org.settings) as conn:
        summary = scan(conn, root)
        paths = sorted(r["path"] for r in conn.execute("SELECT path FROM vault_files"))
    return summary, paths


def _warning(summary, start: str) -> str:
    found = [w for w in summary.warnings if w.startswith(start)]
    assert found, summary.warnings
    return found[0]


@pytest.mark.slow
@pytest.mark.parametrize(
    "front, expect",
    [
        ("score: .nan\nbest: .inf\nworst: -.inf\n", "not a finite number"),
        ('title: "bad \\ud800 escape"\nnul: "a\\0b"\n', None),
        ("a: &a [*a]\n", "aliases"),
        ("a: &x 1\nb: *x\n", "aliases"),
        ("deep: " + "[" * 5000 + "\n", "nested"),
        ("deep: " + "[" * 80 + "]" * 80 + "\n", "nested"),
        ("big: " + "x" * 70_000 + "\n", "larger than"),
    ],
    ids=["nan", "surrogate", "recursive-alias", "alias", "deep-unclosed", "deep", "big"],
)
def test_bad_front_matter_is_dropped_with_a_named_warning(org, tmp_path, front, expect):
    root = tmp_path / "vault"
    _good_notes(root)
    _note(root, "bad.md", f"---\n{front}---\n# Bad front\n\nthe body is still indexed\n")
    summary, paths = _scan(org, root)
    assert paths == ["bad.md", "good/n0.md", "good/n1.md", "good/n2.md"]
    if expect:
        assert expect in _warning(summary, "bad.md: ")
    with connect(org.settings) as conn:
        row = conn.execute("SELECT title, frontmatter FROM vault_files WHERE path = 'bad.md'").fetchone()
    if expect == "not a finite number":
        assert row["frontmatter"] == {"score": None, "best": None, "worst": None}
    if expect is None:
        assert row["title"] == "bad \ufffd escape" and row["frontmatter"]["nul"] == "ab"


@pytest.mark.slow
def test_invalid_utf8_file_name_is_skipped_and_named(org, tmp_path):
    root = tmp_path / "vault"
    _good_notes(root)
    with open(os.path.join(os.fsencode(root), b"caf\xe9.md"), "wb") as fh:
        fh.write(b"# Cafe\n")
    os.mkdir(os.path.join(os.fsencode(root), b"dir\xff"))
    with open(os.path.join(os.fsencode(root), b"dir\xff", b"inner.md"), "wb") as fh:
        fh.write(b"# Inner\n")
    summary, paths = _scan(org, root)
    assert paths == ["good/n0.md", "good/n1.md", "good/n2.md"]
    assert "not valid UTF-8" in _warning(summary, "caf\\xe9.md: ")
    assert "not valid UTF-8" in _warning(summary, "dir\\xff: ")
    assert summary.skipped == 2


@pytest.mark.slow
def test_outside_symlink_big_file_and_device_are_skipped(org, tmp_path):
    root = tmp_path / "vault"
    _good_notes(root)
    (tmp_path / "secret.md").write_text("# Secret\n\noutside the vault\n")
    (root / "leak.md").symlink_to(tmp_path / "secret.md")
    (root / "inside.md").symlink_to(root / "good" / "n0.md")  # a link within the vault is followed
    with open(root / "huge.md", "wb") as fh:
        fh.truncate(MAX_FILE_BYTES + 1)
    summary, paths = _scan(org, root)
    assert paths == ["good/n0.md", "good/n1.md", "good/n2.md", "inside.md"]
    assert "outside the vault" in _warning(summary, "leak.md: ")
    assert "larger than" in _warning(summary, "huge.md: ")
    assert summary.skipped == 2


def _scan_process(org, root: Path) -> subprocess.CompletedProcess:
    """`cli-org vault scan` in a child with bounded memory and time, for inputs that once
    hung the scan or ate all memory."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    env = {**os.environ, **org.env, "ORG_AGENT": ""}
    return subprocess.run(
        [sys.executable, "-m", "cli_org", "vault", "scan", str(root)],
        cwd=WORKTREE,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=limit,
    )


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "billion-laughs"])
def test_hostile_files_neither_hang_nor_exhaust_the_scan(org, tmp_path, kind):
    root = tmp_path / "vault"
    _good_notes(root)
    if kind == "fifo":
        os.mkfifo(root / "pipe.md")
        expect = "pipe.md: not a regular file"
    elif kind == "dev-zero":
        (root / "x.md").symlink_to("/dev/zero")
        expect = "x.md: "
    else:
        levels = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
        levels += [f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
        _note(root, "laughs.md", "---\n" + "\n".join(levels) + "\n---\n# Laughs\n")
        expect = "laughs.md: frontmatter uses YAML aliases"
    try:
        done = _scan_process(org, root)
    except subprocess.TimeoutExpired:
        pytest.fail("the scan hung")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and expect in done.stderr
    assert "added 3" in done.stdout or "added 4" in done.stdout


# --- command-line arguments and environment values that are not UTF-8 ------------------------


def _cli_process(org, *args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cli_org", *args],
        cwd=WORKTREE,
        env={**os.environ, **org.env, **(env or {})},
        capture_output=True,
        timeout=60,
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "args, named",
    [
        ([b"recall", b"deploy \xff freeze"], b"argument 2"),
        ([b"remember", b"subj", b"claim \xfe", b"--source", b"a.md"], b"argument 3"),
        ([b"facts", b"--as", b"bo\xfft"], b"--as"),
        ([b"facts", b"--as=bo\xfft"], b"--as"),
        ([b"vault", b"search", b"caf\xe9"], b"argument 3"),
    ],
)
def test_argument_that_is_not_utf8_is_a_usage_error(org, args, named):
    done = _cli_process(org, *args)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count(b"\n") == 1 and b"Traceback" not in done.stderr
    assert done.stderr.startswith(b"cli-org: ") and named in done.stderr and b"not valid UTF-8" in done.stderr


@pytest.mark.slow
def test_environment_value_that_is_not_utf8_is_a_usage_error(org):
    done = _cli_process(org, "facts", env={"ORG_AGENT": os.fsdecode(b"bo\xfft")})
    assert done.returncode == 2 and done.stderr.count(b"\n") == 1, done.stderr
    assert b"ORG_AGENT" in done.stderr and b"not valid UTF-8" in done.stderr


@pytest.mark.slow
def test_in_process_surrogate_argument(cli):
    code, out, err = cli("recall", "deploy \udcff freeze", agent="bot")
    assert code == 2 and err.count("\n") == 1 and "argument 2" in err


def test_settings_refuse_an_environment_value_that_is_not_utf8():
    with pytest.raises(ConfigError, match="ORG_VAULT is not valid UTF-8"):
        Settings.from_env({"ORG_VAULT": os.fsdecode(b"/v\xff")})


# --- golden and noise files ---------------------------------------------------------------------


@pytest.mark.slow
def test_noise_file_not_utf8_is_one_line_naming_file_and_line(cli, tmp_path):
    noise = tmp_path / "noise.txt"
    noise.write_bytes(b"# header\nqqzx vvwy\nbad \xff query\n")
    code, out, err = cli("eval", "noise", str(noise), agent="bot")
    assert code == 1 and out == "" and err.count("\n") == 1
    assert str(noise) in err and "line 3" in err and "UTF-8" in err


@pytest.mark.slow
def test_noise_file_with_nul_is_refused_naming_the_line(cli, tmp_path):
    noise = tmp_path / "noise.txt"
    noise.write_text("qqzx vvwy\nnul \x00 here\n")
    code, out, err = cli("eval", "noise", str(noise), agent="bot")
    assert code == 1 and out == "" and err.count("\n") == 1
    assert str(noise) in err and "line 2" in err and "NUL" in err


@pytest.mark.slow
def test_golden_nul_and_bad_utf8_name_the_line_and_nothing_runs(cli, org, tmp_path):
    golden = tmp_path / "g.txt"
    golden.write_text("fine question|fine.md\nque\x00stion|x.md\n")
    code, out, err = cli("eval", "golden", str(golden), agent="bot")
    assert code == 1 and out == "" and err.count("\n") == 1
    assert str(golden) in err and "line 2" in err and "NUL" in err
    golden.write_bytes(b"fine question|fine.md\n\nq|caf\xe9.md\n")
    code, out, err = cli("eval", "golden", str(golden), agent="bot")
    assert code == 1 and out == "" and str(golden) in err and "line 3" in err and "UTF-8" in err
    with org.admin() as conn:
        assert conn.execute("SELECT count(*) AS n FROM recall_events").fetchone()["n"] == 0


def test_golden_parser_names_a_lone_surrogate_line():
    with pytest.raises(InputError, match="line 1: .*UTF-8"):
        parse_golden("q\ud800|x\n", "g.txt")
    with pytest.raises(InputError, match="line 2"):
        parse_queries("fine\nbad \x00\n", "n.txt")


# --- two `cli-org init` at once on a fresh data folder ---------------------------------------


@pytest.mark.slow
def test_create_database_race_has_no_loser(server):
    if server.data_dir is None:
        pytest.skip("CLI_ORG_TEST_DATABASE_URL is set: cli-org creates no database there")
    from cli_org.store.bootstrap import create_database

    for attempt in range(4):
        name = f"race_{uuid.uuid4().hex[:10]}"
        settings = Settings.from_env({"CLI_ORG_DATA_DIR": str(server.data_dir), "CLI_ORG_DATABASE": name})
        barrier = threading.Barrier(3)
        results: list = []

        def create(settings: Settings, barrier: threading.Barrier, results: list) -> None:
            barrier.wait()
            try:
                results.append(create_database(settings))
            except Exception as exc:  # noqa: BLE001  (the failure under test)
                results.append(exc)

        threads = [threading.Thread(target=create, args=(settings, barrier, results)) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        with psycopg.connect(server.admin_url, autocommit=True) as conn:
            conn.execute(pgsql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(pgsql.Identifier(name)))
        assert sorted(results, key=str) == [False, False, True], f"attempt {attempt}: {results}"


@pytest.mark.slow
def test_two_inits_at_once_on_a_fresh_data_folder(tmp_path):
    data = tmp_path / "data"
    env = {**os.environ, "CLI_ORG_DATA_DIR": str(data), "CLI_ORG_DATABASE_URL": "", "CLI_ORG_DATABASE": "org"}
    try:
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "cli_org", "init", "--owner", "ada"],
                cwd=WORKTREE,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        outputs = [p.communicate(timeout=120) for p in procs]
        assert [p.returncode for p in procs] == [0, 0], outputs
        assert not any("Traceback" in err for _, err in outputs)
        listed = subprocess.run(
            [sys.executable, "-m", "cli_org", "agents", "list", "--json"],
            cwd=WORKTREE,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        owners = [a["name"] for a in json.loads(listed.stdout) if a.get("is_owner")]
        assert owners == ["ada"], listed.stdout
    finally:
        subprocess.run([sys.executable, "-m", "cli_org", "db", "stop"], cwd=WORKTREE, env=env, timeout=60)
