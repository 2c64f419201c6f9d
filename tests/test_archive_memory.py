"""Memory-file versions: a copy per content change, and the history with diffs."""

import json
import os
from pathlib import Path

import psycopg
import pytest
from psycopg.rows import dict_row

from cli_org.archive.memory_versions import capture, expand, file_history, source_of
from cli_org.errors import InputError, NotFound


def _capture(org, *paths):
    with org.admin() as conn:
        return capture(conn, list(paths))


def _history(org, name):
    with org.admin() as conn:
        return file_history(conn, name)


@pytest.mark.slow
def test_three_edits_make_three_versions_and_unchanged_none(org, tmp_path):
    memory = tmp_path / ".claude" / "projects" / "-w-app" / "memory" / "MEMORY.md"
    memory.parent.mkdir(parents=True)
    texts = ["- uses pytest\n", "- uses pytest\n- CI has 2 cores\n", "- CI has 2 cores\n- deploys at 02:00\n"]
    for n, text in enumerate(texts, start=1):
        memory.write_text(text)
        (result,) = _capture(org, memory).files
        assert (result.version, result.new, result.source) == (n, True, "claude-memory")
    (same,) = _capture(org, memory).files
    assert (same.version, same.new) == (3, False)
    found = _history(org, "MEMORY.md")
    assert (found.root, found.path) == (str(memory.parent.resolve()), "MEMORY.md")
    assert found.file == str(memory.resolve()) and [v.version for v in found.versions] == [1, 2, 3]
    assert [(v.added, v.removed) for v in found.versions] == [(1, 0), (1, 0), (1, 1)]
    assert "-- uses pytest\n" in found.versions[2].diff and "+- deploys at 02:00\n" in found.versions[2].diff
    assert [v.size for v in found.versions] == [len(t) for t in texts]


@pytest.mark.slow
def test_reverting_is_a_change_too(org, tmp_path):
    note = tmp_path / "USER.md"
    for text in ("a\n", "b\n", "a\n"):
        note.write_text(text)
        _capture(org, note)
    assert [v.version for v in _history(org, str(note)).versions] == [1, 2, 3]


def test_folders_give_md_files_and_skip_lock_temp_backup(tmp_path):
    folder = tmp_path / "memories"
    folder.mkdir()
    for name in ("MEMORY.md", "USER.md", "MEMORY.md.lock", "MEMORY.md~", ".MEMORY.md.swp", "USER.bak.md", "x.tmp"):
        (folder / name).write_text("x")
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD.md").write_text("x")
    files, skipped = expand([folder])
    assert [f.name for f in files] == ["MEMORY.md", "USER.md"]
    assert {Path(s).name for s in skipped} == {"USER.bak.md", "HEAD.md"}
    files, skipped = expand([folder / "MEMORY.md.lock"])
    assert files == [] and len(skipped) == 1


def test_sources_by_place(tmp_path):
    assert source_of(Path("/h/.claude/projects/-w/memory/topic/build.md")) == "claude-memory"
    assert source_of(Path("/h/.hermes/memories/USER.md")) == "hermes-memory"
    assert source_of(Path("/w/app/.agents/org/memory/bot.md")) == "org-memory"
    assert source_of(Path("/w/notes.md")) == "file"


@pytest.mark.slow
def test_history_errors(org, tmp_path):
    with pytest.raises(NotFound, match="no archived versions"):
        _history(org, "MEMORY.md")
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "MEMORY.md").write_text(folder)
        _capture(org, tmp_path / folder / "MEMORY.md")
    with pytest.raises(InputError, match="matches 2 archived files"):
        _history(org, "MEMORY.md")
    assert _history(org, "b/MEMORY.md").file.endswith("/b/MEMORY.md")
    with pytest.raises(NotFound, match="does not exist"):
        _capture(org, tmp_path / "missing.md")


@pytest.mark.slow
def test_cli_memory_and_history_on_hermes_files(cli, tmp_path, corpora):
    transcripts = corpora("transcripts")
    memories = transcripts / "hermes" / "memories"
    code, out, _ = cli("archive", "memory", str(memories))
    assert code == 0 and out.splitlines()[-1] == "2 files: 2 new versions, 0 unchanged; 0 ignored"
    assert cli("archive", "memory", str(memories))[1].strip() == "2 files: 0 new versions, 2 unchanged; 0 ignored"
    code, out, _ = cli("archive", "history", "memories/USER.md", "--json")
    found = json.loads(out)
    assert found["source"] == "hermes-memory" and len(found["versions"]) == 1
    assert found["versions"][0]["size"] == (memories / "USER.md").stat().st_size


@pytest.mark.slow
def test_cli_history_text_and_default_paths(cli, tmp_path, monkeypatch):
    bots = tmp_path / ".agents" / "org" / "memory"
    bots.mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for var in ("CLAUDE_CONFIG_DIR", "HERMES_HOME"):
        monkeypatch.delenv(var, raising=False)
    (bots / "bot.md").write_text("one\n")
    code, out, _ = cli("archive", "memory")
    assert code == 0 and "(org-memory, 4 bytes)" in out
    (bots / "bot.md").write_text("one\ntwo\n")
    os.utime(bots / "bot.md", (1_800_000_000, 1_800_000_000))
    cli("archive", "memory")
    code, out, _ = cli("archive", "history", "bot.md")
    lines = out.splitlines()
    assert code == 0 and lines[0].endswith("bot.md (org-memory): 2 versions")
    # 1.8e9 is 2027-01-15 08:00 UTC: the same day in any server time zone from -08 to +15.
    assert lines[2].startswith("v2  2027-01-15 ") and "  8 bytes  +1 -0  captured " in lines[2]
    assert "+two" in out and "--- v1" in out
    assert "+two" not in cli("archive", "history", "bot.md", "--no-diff")[1]
    code, _, err = cli("archive", "history", "ghost.md")
    assert code == 1 and err.startswith("cli-org: no archived versions of ghost.md")


# --- one project root for recall and `archive memory` (issue 10, bug 3) ----------------


@pytest.mark.slow
def test_archive_memory_from_a_subfolder_captures_what_recall_reads(cli, tmp_path, monkeypatch):
    project = tmp_path / "app"
    (project / ".git").mkdir(parents=True)
    bots = project / ".agents" / "org" / "memory"
    bots.mkdir(parents=True)
    (bots / "builder.md").write_text("- the nightly rollback drill runs at 03:00\n")
    deep = project / "src" / "deep"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for var in ("CLAUDE_CONFIG_DIR", "HERMES_HOME", "ORG_ROOT"):
        monkeypatch.delenv(var, raising=False)
    code, out, _ = cli("recall", "nightly rollback drill", "--arms", "memory", agent="bot")
    assert code == 0 and "[memory] .agents/org/memory/builder.md:1" in out
    code, out, err = cli("archive", "memory", "--json")
    assert (code, err) == (0, "")
    (captured,) = json.loads(out)["files"]
    assert captured["root"] == str(project.resolve()) and captured["path"] == ".agents/org/memory/builder.md"


# --- versions stored under a root and a relative path (issue 10, bug 4) -----------------


@pytest.mark.slow
def test_the_specifications_query_finds_memory_md(org, tmp_path):
    claude = tmp_path / ".claude" / "projects" / "-w-app" / "memory"
    (claude / "topic").mkdir(parents=True)
    (claude / "MEMORY.md").write_text("- index\n")
    (claude / "topic" / "build.md").write_text("- build notes\n")
    hermes = tmp_path / ".hermes" / "memories"
    hermes.mkdir(parents=True)
    (hermes / "MEMORY.md").write_text("- hermes index\n")
    bots = tmp_path / "w" / ".agents" / "org" / "memory"
    bots.mkdir(parents=True)
    (bots / "bot.md").write_text("- bot note\n")
    _capture(org, claude, hermes / "MEMORY.md", bots / "bot.md")
    with org.admin() as conn:
        rows = conn.execute(
            "SELECT root, path, abs_path, length(content) AS n FROM archive_memory_versions "
            "WHERE path = 'MEMORY.md' ORDER BY captured_at, root"
        ).fetchall()
        bot = conn.execute("SELECT root, path FROM archive_memory_versions WHERE source = 'org-memory'").fetchone()
        topic = conn.execute("SELECT root FROM archive_memory_versions WHERE path = 'topic/build.md'").fetchone()
    assert {r["root"] for r in rows} == {str(claude.resolve()), str(hermes.resolve())}
    assert {r["abs_path"] for r in rows} == {
        str((claude / "MEMORY.md").resolve()),
        str((hermes / "MEMORY.md").resolve()),
    }
    assert bot == {"root": str((tmp_path / "w").resolve()), "path": ".agents/org/memory/bot.md"}
    assert topic == {"root": str(claude.resolve())}
    # Two files named MEMORY.md count their versions apart; history needs more of the path.
    with pytest.raises(InputError, match="matches 2 archived files"):
        _history(org, "MEMORY.md")
    assert _history(org, "memories/MEMORY.md").root == str(hermes.resolve())
    assert _history(org, str(claude / "MEMORY.md")).path == "MEMORY.md"
    assert _history(org, ".agents/org/memory/bot.md").source == "org-memory"


@pytest.mark.slow
def test_migration_0011_backfills_root_and_relative_path(blank_db):
    from cli_org.archive.memory_versions import locate
    from cli_org.db.migrate import available, migrate, repeatables

    with psycopg.connect(blank_db.server.url(blank_db.name), autocommit=True, row_factory=dict_row) as conn:
        # As a restore of a backup made at 0010 leaves it: the functions, then 0001 to 0010.
        migrate(conn, only=range(1, 11))
        old = [
            ("claude-memory", "/h/.claude/projects/-w-app/memory/MEMORY.md"),
            ("claude-memory", "/h/.claude/projects/-w-app/memory/topic/build.md"),
            ("hermes-memory", "/h/.hermes/memories/USER.md"),
            ("org-memory", "/w/app/.agents/org/memory/bot.md"),
            ("file", "/w/notes/today.md"),
        ]
        for source, path in old:
            conn.execute(
                "INSERT INTO archive_memory_versions (source, path, version, content, sha256, size)"
                " VALUES (%s, %s, 1, 'x', 'h', 1)",
                (source, path),
            )
    with psycopg.connect(blank_db.server.url(blank_db.name), row_factory=dict_row) as conn:
        can = blank_db.server.vectors  # or those that require pgvector wait
        later = [m for m in available() if m.version >= 11 and (can or not m.needs)]
        later += [m for m in repeatables() if not m.first and (can or not m.needs)]
        assert [m.label for m in migrate(conn)] == [m.label for m in later]
        rows = conn.execute("SELECT root, path, abs_path FROM archive_memory_versions ORDER BY id").fetchall()
    assert [(r["root"], r["path"]) for r in rows] == [
        ("/h/.claude/projects/-w-app/memory", "MEMORY.md"),
        ("/h/.claude/projects/-w-app/memory", "topic/build.md"),
        ("/h/.hermes/memories", "USER.md"),
        ("/w/app", ".agents/org/memory/bot.md"),
        ("/w/notes", "today.md"),
    ]
    assert [r["abs_path"] for r in rows] == [p for _, p in old]
    # The Python rule for new rows agrees with the backfill.
    assert [locate(Path(p), s) for s, p in old] == [(r["root"], r["path"]) for r in rows]
