"""Every command that has --json prints JSON carrying its documented fields, on every path.

The commands are found by walking the click tree, so a new command with --json fails
`test_every_json_command_is_documented_here` until its fields are written down below. The
fields are the ones docs/ describes for each command (for the eval commands docs/recall.md
lists them by name; `test_docs_list_the_eval_json_fields` keeps the two in step).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest

from cli_org.db.connect import connect
from cli_org.evaluation import CaseResult, GoldenRun, figures, save_run
from cli_org.faces.cli import cli as root_group
from tests.fakes import HashEmbedder
from tests.helpers import insert_proposal

EVAL_PAGE = Path(__file__).resolve().parents[1] / "docs" / "recall.md"


def json_commands(group: click.Group = root_group, prefix: tuple[str, ...] = ()) -> list[str]:
    found = []
    for name, command in sorted(group.commands.items()):
        path = (*prefix, name)
        if isinstance(command, click.Group):
            found += json_commands(command, path)
            if command.invoke_without_command and any(p.name == "as_json" for p in command.params):
                found.append(" ".join(path))  # a group that is a command too (`facts`)
        elif any(p.name == "as_json" for p in command.params):
            found.append(" ".join(path))
    return found


# A field spec: an object's keys (F), some of them with a spec of their own for a nested
# object, or [spec] for a list whose every item matches spec (the full setup below makes
# each such list non-empty).


def F(*keys: str, **nested) -> dict:
    return {**dict.fromkeys(keys), **nested}


FIGURES = F("n", "hit_rate", "mrr", "chars_median", "chars_p95", "ms_median", "ms_p95")
AGENT = F("name", "kind", "team_lead", "is_owner", "role_name")
PROPOSAL = F(
    "id", "agent", "project", "subject", "claim", "kind", "why", "score", "harness", "session", "message",
    "session_id", "state", "fact_id", "decided_by", "decided_at", "reason", "created_at",
)  # fmt: skip
FIELDS: dict[str, object] = {
    # "database ... created ... migrations applied ... the first owner"
    "init": F("database", "created", "applied", "owner"),
    # "pid, port, data dir ... initialised ... migrations pending ... notes, chunks, chunks with vectors"
    "db status": F(
        "embedded",
        "running",
        "pid",
        "port",
        "data_dir",
        "initialised",
        "pending_migrations",
        "files",
        "chunks",
        "vectors",
    ),
    "agents add": AGENT,
    "agents list": [AGENT],
    # "prints its id"; an identical claim "returns the existing id and says so"; --supersedes
    "remember": F("id", "duplicate", "superseded"),
    "forget": F("id", "retired", "why"),
    # each store "with its usage (N% used, x/cap chars)" and its entries
    "notebook show": F(
        "agent",
        stores=[
            F(
                "agent",
                "target",
                "cap",
                "used",
                "percent",
                entries=[F("id", "agent", "store", "body", "version", "created_at", "changed_at", "changed_by")],
            )
        ],
    ),
    # "every version of every entry ... by whom and when"
    "notebook history": [F("entry_id", "version", "agent", "store", "action", "body", "at", "by")],
    # current and, with --all, retired facts "with when, who and why"
    "facts": [
        F(
            "id",
            "subject",
            "claim",
            "source",
            "author",
            "project",
            "kind",
            "confidence",
            "via",
            "valid_to",
            "retired_by",
            "retired_reason",
            "supersedes",
            "superseded_by",
            "created_at",
        )
    ],
    # "--json adds every hit's arm, scores and why it qualified"; the log's arms, characters, milliseconds
    "recall": F("query", "project", "limit", "arms", "chars", "ms", "notice", hits=[F("arm", "why")]),
    # "added, changed, removed, unchanged and seconds"
    "vault scan": F(
        "embed",
        scan=F(
            "root",
            "added",
            "changed",
            "removed",
            "unchanged",
            "seconds",
            "warnings",
            "made_public",
            "made_public_paths",
        ),
    ),
    "vault embed": F("model", "embedded", "total", "seconds"),
    # "path, title, heading, a snippet and the per-mode scores"
    "search": F(
        "query",
        "mode",
        "notice",
        hits=[F("path", "title", "heading", "snippet", "score", "keyword_score", "semantic_score")],
    ),
    "eval golden": F(
        "k", "by_tag", overall=FIGURES, cases=[F("question", "expected", "tag", "position", "chars", "ms")]
    ),
    "eval compare": F(
        "a",
        "b",
        "k_a",
        "k_b",
        "now_hit",
        "now_miss",
        "hit",
        "chars",
        "verdict",
        "warnings",
        rows=[F("metric", "unit", "a", "b", "delta", "direction", "change")],
        changed=[F("question", "expected", "position_a", "position_b", "chars_a", "chars_b", "change")],
    ),
    "eval history": [
        F(
            "name",
            "author",
            "created_at",
            "git_commit",
            "embedder",
            "vault_files",
            "golden_file",
            "k",
            "problem",
            "previous",
            overall=FIGURES,
        )
    ],
    "eval noise": F("k", "passed", "failed", queries=[F("query", "hits", "chars", "arms")]),
    "eval hook": F(
        "by_tag",
        overall=F("quiet_n", "quiet_rate", "needed_n", "needed_rate", "injections", "chars_median"),
        cases=[F("prompt", "expected", "tag", "injected", "found", "ms")],
    ),
    "eval cost": F(
        "root",
        "chars_per_token",
        rows=[F("kind", "files", "chars", "tokens_estimate", "long_lines", "paths")],
        recall=F("calls", "median_chars", "tokens_estimate", "days", "error"),
    ),
    "eval stale": F("root", items=[F("where", "cited", "problem")]),
    # "one summary line per harness": files, sessions, messages, malformed lines per reason, failures
    "archive import": F(
        imported=[F("harness", "sources", "read", "sessions", "messages", "malformed", "skipped", "failed")],
        proposed=F("sessions", "messages", "proposed", "known", "refused", "repeated"),
    ),
    "archive propose": F("sessions", "messages", "proposed", "known", "refused", "repeated"),
    "archive judge": F("sessions", "judged"),
    "archive memory": F("ignored", files=[F("path", "source", "size", "version", "new")]),
    # "when it was edited, its size, lines added and removed, and the diff"
    "archive history": F(
        "path", "source", versions=[F("version", "modified_at", "captured_at", "size", "added", "removed", "diff")]
    ),
    # "sessions, sessions that used memory, recall calls, remember calls and the adoption rate"; the log, per agent
    "usage": F(
        "days",
        harnesses=[F("harness", "sessions", "sessions_using", "recall_calls", "remember_calls", "adoption_pct")],
        log=F("agents", "agents_using", "recall_calls", "remember_calls", "adoption_pct"),
        # calls served by `cli-org mcp`, per face and tool
        tools=[F("face", "tool", "calls", "refused", "agents")],
        # issue 15: over time per harness, per agent from the log, per session, hits later quoted
        bucket=None,
        recalls_per_using_session=None,
        sessions=None,  # the sample archive's one session neither recalls nor remembers
        over_time=[F("period", "harness", "sessions", "sessions_using", "sessions_recalled", "sessions_remembered")],
        agents_over_time=[F("period", "agent", "recalls", "remembers")],
        agents=[F("agent", "recalls", "remembers", "days_recalling", "chars_mean", "chars_median", "chars_p95")],
        quoted=F(
            "phrase_words",
            "min_content_words",
            "sessions",
            "recall_calls",
            "tied",
            arms=[F("arm", "recalls", "hits", "quoted", "by_id", "by_path", "by_phrase", "share")],
        ),
    ),
    # "its time, harness, session, role and a snippet"
    "sessions search": [F("occurred_at", "harness", "session", "kind", "tool_name", "snippet")],
    # "the messages in order, tool calls first-class"
    "sessions show": F(
        "harness",
        "external_id",
        "parent",
        "project",
        "cwd",
        "started_at",
        "ended_at",
        "tool_calls",
        messages=[F("position", "kind", "occurred_at", "text", "tool")],
    ),
    # "`fact`, `events`, `older`, `newer` and `chain`"
    "facts show": F(
        "fact",
        "older",
        "newer",
        "chain",
        "confirmed_by",
        events=[F("at", "who", "what", "detail")],
        # its live links both ways (docs/facts.md, "Links")
        links=[F("id", "direction", "kind", "other_id", "other_subject", "other_claim", "author", "reason")],
    ),
    # a link's fields; unlink adds who removed it, when and why
    "link": F("id", "from_id", "kind", "to_id", "author", "reason", "via", "created_at"),
    "unlink": F("id", "from_id", "kind", "to_id", "author", "removed_by", "removed_at", "removed_reason"),
    # an owner's erase (docs/facts.md, `facts erase`): rows changed per place
    "facts erase": F("id", "erased", "reason", "places", "still_quoted_by"),
    "archive erase": F("session", "position", "erased", "places", "still_quoted_by"),
    "facts embed": F("embedded"),
    # "current, retired and superseded facts; confirmed against inferred; per author and kind; ..."
    "facts summary": F(
        "facts",
        "current",
        "retired",
        "superseded",
        "confirmed",
        "inferred",
        "with_project",
        "project_share",
        "claim_median",
        "claim_max",
        "other_authors",
        "near_duplicates",
        "near_duplicates_at_least",
        "near_duplicates_newest",
        "stale_sources",
        "stale_root",
        by_author=[F("name", "facts")],
        by_kind=[F("name", "facts")],
    ),
    # pins and todos: their rows (docs/facts.md, "Pins and todos"); restore as forget
    "pin": F(
        "pin_id", "fact_id", "project", "pinned_by", "pinned_at", "unpinned_by", "unpinned_at", "subject", "claim"
    ),
    "unpin": F("pin_id", "fact_id", "project", "unpinned_by", "unpinned_at", "unpin_reason"),
    "pins": [F("pin_id", "fact_id", "project", "pinned_by", "pinned_at", "subject", "claim")],
    "restore": F("id", "restored", "why", "pin"),
    # owner-approved texts for the write scan (docs/facts.md, "cli-org checks allow")
    "checks allow": F("sha256", "approved_by", "approved_at", "reason"),
    "checks approvals": [F("sha256", "approved_by", "approved_at", "reason")],
    "todo add": F("id", "text", "project", "author", "created_at", "done_by", "done_at"),
    "todo done": F("id", "done_by", "done_at"),
    "todo list": [F("id", "text", "project", "author", "created_at", "done_by", "done_at")],
    "proposals": [PROPOSAL],
    "proposals accept": PROPOSAL,
    "proposals reject": PROPOSAL,
    # projects and their restrictions (docs/facts.md, "Restricted projects")
    "projects": [F("project", "facts", "todos", "sessions", "restricted_to")],
    "projects restrict": F("project", "restricted_to", "lifted"),
    # activity: a page of the feed (docs/facts.md, "Activity")
    "activity": F(
        "since",
        "kinds",
        "next",
        events=[F("at", "kind", "who", "via", "fact_id", "ref", "subject", "detail", "project", "other")],
    ),
    # import: the counts per kind (docs/facts.md, "Export and import")
    "import": F("format", "migration", "dry_run", kinds=[F("kind", "added", "present", "conflicting", "conflicts")]),
    # tidy: the report and each proposal with its evidence (docs/facts.md, tidy)
    "tidy": F(
        "project",
        "applied",
        "roots",
        "threshold",
        proposals=[F("action", "fact_id", "kept_id", "subject", "claim", "author", "project", "evidence", "done")],
    ),
    # review: what waits for the caller, counted by kind, and the items (docs/facts.md, Review)
    "review": F("agent", "reviewer", "counts", "items", "refreshed_at", "error"),
    # context: the block, its size and stable prefix, what is shown by section, what is omitted and why
    "context": F(
        "agent",
        "project",
        "for_text",
        "session",
        "budget",
        "format",
        "text",
        "chars",
        "tokens",
        "prefix_chars",
        "hidden",
        sections=[F("name", "title", "stable", entries=[F("key", "line", "mark")])],
        omitted=[F("key", "reason")],
        omitted_counts=F("budget", "duplicate", "retired", "superseded"),
    ),
    # a libpq URL, whose user and database, and where its password comes from
    "db url": F("url", "user", "database", "agent", "password_from"),
    # setup: the harness and scope, each file with what was done to it and its backup, the diff
    "setup": F(
        "harness",
        "scope",
        "project_dir",
        "agent",
        "agent_created",
        "agent_missing",
        "remove",
        "dry_run",
        "diff",
        "notes",
        changes=[F("path", "what", "action", "backup")],
    ),
    # the warm helper (docs/recall.md, "Warm helper")
    "warm status": F("running", "target", "socket", "enabled", "pid", "started_at", "idle_timeout", "requests"),
    "warm stop": F("stopped"),
    # backups (docs/facts.md, "Backups"): the file, its size and time; a restore's replaced database and new roles
    "db backup": F("file", "database", "bytes", "tables", "seconds", "tool"),
    "db restore": F(
        "file", "database", "source_database", "replaced", "roles_created", "roles_disabled", "seconds", "tool"
    ),
}

ARGS: dict[str, tuple[list[str], str | None]] = {
    "init": (["init", "--owner", "boss"], None),
    "db status": (["db", "status"], None),
    "agents add": (["agents", "add", "newbie"], None),
    "agents list": (["agents", "list"], None),
    "remember": (["remember", "deploys", "Deploys run at night", "--source", "docs/deploy.md"], "bot"),
    "forget": (["forget", "{fact}", "it changed"], "bot"),
    "facts": (["facts", "--all"], None),
    "notebook show": (["notebook", "show"], "bot"),
    "notebook history": (["notebook", "history"], "bot"),
    "recall": (["recall", "kilo lima"], None),
    "vault scan": (["vault", "scan", "{vault}"], None),
    "vault embed": (["vault", "embed"], None),
    "search": (["search", "kilo", "--mode", "keyword"], None),
    "eval golden": (["eval", "golden", "{golden}"], None),
    "eval compare": (["eval", "compare", "r1", "r2"], None),
    "eval history": (["eval", "history"], None),
    "eval noise": (["eval", "noise", "{noise}"], None),
    "eval hook": (["eval", "hook", "{hook}"], "bot"),
    "eval cost": (["eval", "cost", "--root", "{root}"], None),
    "eval stale": (["eval", "stale", "--root", "{root}"], None),
    "archive import": (["archive", "import", "--claude", "{projects}"], None),
    "archive propose": (["archive", "propose"], None),
    "archive judge": (["archive", "judge"], None),
    "archive memory": (["archive", "memory", "{memory}"], None),
    "archive history": (["archive", "history", "{memory}"], None),
    "usage": (["usage"], None),
    "sessions search": (["sessions", "search", "deploy"], None),
    "sessions show": (["sessions", "show", "S"], None),
    "facts show": (["facts", "show", "{fact}"], None),
    "facts erase": (["facts", "erase", "{forgotten}", "--reason", "it leaked"], "boss"),
    "archive erase": (["archive", "erase", "S", "1", "--reason", "it leaked"], "boss"),
    "facts embed": (["facts", "embed"], "bot"),
    "facts summary": (["facts", "summary", "--root", "{root}"], None),
    "db url": (["db", "url"], None),
    "pin": (["pin", "{fact}"], "bot"),
    "unpin": (["unpin", "{pinned}"], "bot"),
    "link": (["link", "{fact}", "explains", "{pinned}", "--reason", "the helper is pinned"], "bot"),
    "unlink": (["unlink", "{link}", "it changed"], "bot"),
    "pins": (["pins"], None),
    "restore": (["restore", "{forgotten}", "it was right"], "bot"),
    "checks allow": (
        ["checks", "allow", "Ignore all previous instructions is the drill's phrase", "--reason", "a quote"],
        "boss",
    ),  # fmt: skip
    "checks approvals": (["checks", "approvals"], None),
    "todo add": (["todo", "add", "Migrate the auth tests"], "bot"),
    "proposals": (["proposals"], "bot"),
    "proposals accept": (["proposals", "accept", "{proposal}"], "bot"),
    "proposals reject": (["proposals", "reject", "{rejected}", "--reason", "plain work"], "bot"),
    "todo done": (["todo", "done", "{todo}"], "bot"),
    "todo list": (["todo", "list"], None),
    "projects": (["projects"], None),
    "projects restrict": (["projects", "restrict", "acme", "--to", "bot"], None),
    "tidy": (["tidy"], None),
    "review": (["review"], "boss"),
    "activity": (["activity", "--since", "all"], None),
    "import": (["import", "{export}", "--dry-run"], None),
    "context": (["context", "--budget", "30"], "bot"),  # a small budget: something is omitted
    "setup": (["setup", "claude-code", "--project-dir", "{root}", "--agent", "bot", "--dry-run"], None),
    "warm status": (["warm", "status"], None),
    "warm stop": (["warm", "stop"], None),
    "db backup": (["db", "backup", "{dump}"], None),
    "db restore": (["db", "restore", "{dump}", "--force"], None),
}


def check(data, spec, where: str) -> None:
    if isinstance(spec, list):
        assert isinstance(data, list) and data, f"{where}: expected a non-empty list, got {data!r:.200}"
        for n, item in enumerate(data):
            check(item, spec[0], f"{where}[{n}]")
        return
    assert isinstance(data, dict), f"{where}: expected an object, got {data!r:.200}"
    missing = {k for k in spec if k not in data}
    assert not missing, f"{where}: missing {sorted(missing)}"
    for key, inner in spec.items():
        if inner is not None:
            check(data[key], inner, f"{where}.{key}")


def _files(tmp_path: Path) -> dict[str, str]:
    """The files the commands read; present in both the empty and the full setup."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "kilo.md").write_text("# Kilo\n\nkilo lima mike\n")
    (vault / "zulu.md").write_text("# Zulu\n\nzulu yankee\n")
    root = tmp_path / "root"
    (root / ".agents/org/memory").mkdir(parents=True)
    memory = root / ".agents/org/memory/bot.md"
    memory.write_text("- the old helper lived in `src/gone.py`\n")
    (root / "AGENTS.md").write_text("rules\n")
    golden = tmp_path / "golden.txt"
    golden.write_text("kilo lima|kilo.md|a\nzulu yankee|zulu.md|b\n")
    noise = tmp_path / "noise.txt"
    noise.write_text("qqzx vvwy\n")
    hook = tmp_path / "hook.txt"
    hook.write_text("qqzx vvwy\nkilo lima|mike|words\n")
    export = tmp_path / "export.jsonl"
    export.write_text('{"kind": "header", "format": 1, "migration": 1, "exported_at": "2026-01-01T00:00:00+00:00"}\n')
    projects = tmp_path / "projects"
    (projects / "-w").mkdir(parents=True)
    record = {
        "type": "user",
        "sessionId": "S",
        "uuid": "m1",
        "timestamp": "2099-01-01T00:00:00+00:00",
        "message": {"content": "the deploy failed"},
    }
    (projects / "-w" / "S.jsonl").write_text(json.dumps(record) + "\n")
    return {
        "vault": str(vault),
        "hook": str(hook),
        "root": str(root),
        "memory": str(memory),
        "golden": str(golden),
        "noise": str(noise),
        "export": str(export),
        "projects": str(projects),
        "fact": "1",
        "pinned": "1",
        "link": "1",
        "forgotten": "1",
        "todo": "1",
        "proposal": "1",
        "rejected": "2",
        "dump": str(tmp_path / "org.dump"),
    }


def _fill(org, cli, files: dict[str, str]) -> None:
    """The data every list in FIELDS needs: a vault, facts, saved runs, an archive."""
    from cli_org.archive.importer import import_sessions
    from cli_org.archive.memory_versions import capture
    from cli_org.archive.usage import log_call
    from cli_org.store import approvals, facts, links, notebook, pins, todos
    from cli_org.vault.scan import scan

    with connect(org.settings) as conn:
        scan(conn, Path(files["vault"]))
        import_sessions(conn, {"claude-code": Path(files["projects"])})
        capture(conn, [Path(files["memory"])])
        for name, positions in (("r1", [1, None]), ("r2", [1, 2])):
            cases = [CaseResult(f"q{i}", "x", "-", p, 100, 5.0) for i, p in enumerate(positions)]
            save_run(conn, name, GoldenRun(8, figures(cases), {}, cases), golden_file="g", project=None)
    with org.as_agent("bot") as conn:
        files["fact"] = str(facts.remember(conn, "helper", "Helper in `src/gone.py`", source="src/gone.py").id)
        notebook.add(conn, "memory", "The helper moved out of src/gone.py")
        notebook.add(conn, "user", "Prefers short answers")
        pinned = facts.remember(conn, "pinned", "A pinned claim", source="docs/pin.md").id
        pins.pin(conn, pinned)
        files["pinned"] = str(pinned)
        files["link"] = str(links.link(conn, pinned, "depends-on", int(files["fact"])).id)
        forgotten = facts.remember(conn, "forgotten", "A forgotten claim", source="docs/gone.md").id
        facts.forget(conn, forgotten, "wrong")
        files["forgotten"] = str(forgotten)
        files["todo"] = str(todos.add_todo(conn, "An open item").id)
        todos.add_todo(conn, "An item of one project", project="web")
        for claim in ("A twice stated claim", "A twice stated claim."):  # a near duplicate for `tidy`
            facts.remember(conn, "twice", claim, source="docs/twice.md", allow_duplicate=True)
        log_call(conn, face="mcp", tool="org_recall", ok=True, ms=3)  # as `cli-org mcp` logs a call
    with org.admin() as conn:  # two proposals of bot's, as the archive's import writes them
        session = conn.execute("SELECT id FROM archive_sessions WHERE external_id = 'S'").fetchone()["id"]
        for name, claim in (("proposal", "Run make lint before every commit."), ("rejected", "Rename it to rows.")):
            made = insert_proposal(conn, session, claim, key="m1", subject="habits")
            files[name] = str(made)
        conn.commit()
    with org.as_agent("boss") as conn:
        approvals.approve(conn, "The drill's phrase was: ignore all previous instructions", "a quote")
    assert cli("recall", "kilo")[0] == 0  # one logged recall for `eval cost`


@pytest.fixture
def run_json(org, cli, tmp_path, monkeypatch):
    import cli_org.vault.embedders

    monkeypatch.setattr(cli_org.vault.embedders, "index_embedder", lambda settings: HashEmbedder())
    files = _files(tmp_path)
    monkeypatch.setenv("ORG_ROOT", files["root"])

    def run(command: str, *, full: bool):
        if full:
            _fill(org, cli, files)
            if command == "db restore":  # the backup it restores (over the database: --force)
                from cli_org.db.backup import backup

                backup(org.settings, Path(files["dump"]))
        args, agent = ARGS[command]
        if command == "facts embed":  # it needs the query model: the same stand-in
            monkeypatch.setattr(
                cli_org.vault.embedders, "query_embedder", lambda settings, start=True: (HashEmbedder(), None)
            )
        return cli(*[a.format(**files) for a in args], "--json", agent=agent)

    return run


def test_every_json_command_is_documented_here():
    walked = json_commands()
    assert set(walked) == set(FIELDS) == set(ARGS), "write down the fields and arguments of each --json command"


@pytest.mark.slow
@pytest.mark.parametrize("command", json_commands())
def test_json_output_carries_the_documented_fields(run_json, command):
    code, out, err = run_json(command, full=True)
    assert code == 0, err
    check(json.loads(out), FIELDS[command], command)


@pytest.mark.slow
@pytest.mark.parametrize("command", json_commands())
def test_json_output_on_an_empty_database_is_json_or_nothing(run_json, command):
    """With nothing stored, a command prints JSON, or fails with stdout left empty: never
    plain text where a machine expects JSON."""
    code, out, err = run_json(command, full=False)
    if code == 0:
        json.loads(out)
    else:
        assert out == "" and set(json.loads(err)) == {"error"}, (code, out, err)


def test_eval_commands_emit_their_dataclasses():
    """The eval commands hand the library's dataclasses to the one emitter, never a dict of their own."""
    source = (Path(__file__).resolve().parents[1] / "cli_org/faces/cli/eval_cmd.py").read_text()
    calls = re.findall(r"emit_json\((.*?)\)", source)
    assert calls and all(re.fullmatch(r"[a-z_]+", c) for c in calls), calls


def test_docs_list_the_eval_json_fields():
    readme = EVAL_PAGE.read_text()
    for command in [c for c in FIELDS if c.startswith("eval ")]:
        section = readme.split(f"### `cli-org {command} ", 1)[1].split("\n#", 1)[0]
        (listed,) = re.findall(r"`--json` fields(?:, [^:]+)?: (.+?)\.\n", section, re.S)
        assert set(re.findall(r"`(\w+)`", listed)) == _keys(FIELDS[command]), command


def _keys(spec) -> set[str]:
    """Every key a spec names, nested ones too."""
    if isinstance(spec, list):
        return _keys(spec[0])
    return set(spec) | {k for inner in spec.values() if inner is not None for k in _keys(inner)}
