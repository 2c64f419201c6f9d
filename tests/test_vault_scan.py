"""Scanning a vault: parsing, incremental updates, interruption and bad input."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_org.db.connect import connect
from cli_org.errors import InputError
from cli_org.vault.markdown import MAX_CHUNK
from cli_org.vault.scan import markdown_files, scan
from cli_org.vault.search import search

NOTE = """---
title: Deploy Guide
tags: [ops, "release"]
owner: ada
---
# Deploying

Read [[Runbook|the runbook]] and [[Runbook#Rollback]] first, then [setup](../setup/install.md#linux).
Tagged #shipping and #ops/prod. External [site](https://example.org) is not a note link.

```bash
# not a heading, and #notatag
echo hi
```

## Rollback

Use `#notatag-either` inline code. See [[missing note]].
"""


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def vault(tmp_path):
    root = tmp_path / "vault"
    write(root, "ops/deploy.md", NOTE)
    write(root, "ops/runbook.md", "# Runbook\n\nRestart the worker.\n\n## Rollback\n\nRevert the tag.\n")
    write(root, "setup/install.md", "Install with pip.\n")
    write(root, ".obsidian/hidden.md", "# Hidden\n")
    write(root, ".git/HEAD.md", "# git internals\n")
    write(root, "drafts/wip.md", "# WIP\n")
    write(root, "notes.txt", "not markdown")
    write(root, "other.markdown", "# Other\n\nA second suffix.\n")
    return root


@pytest.fixture
def conn(org):
    with connect(org.settings) as c:
        yield c


def rows(conn, query, params=None):
    """Read, and end the read: library calls take an idle connection (cli_org/db/session.py)."""
    found = conn.execute(query, params).fetchall()
    conn.rollback()
    return found


def term_counts_are_exact(conn) -> bool:
    """vault_terms agrees with a fresh count of the postings, term by term."""
    bad = rows(
        conn,
        """SELECT count(*) AS n FROM vault_terms t
           FULL JOIN (SELECT term, count(*) AS df FROM vault_postings GROUP BY term) p USING (term)
           WHERE coalesce(t.df, 0) <> coalesce(p.df, 0) OR t.df = 0""",
    )[0]["n"]
    return bad == 0


def test_walk_skips_hidden_git_and_ignored(vault):
    assert markdown_files(vault) == [
        "drafts/wip.md",
        "ops/deploy.md",
        "ops/runbook.md",
        "other.markdown",
        "setup/install.md",
    ]
    assert "drafts/wip.md" not in markdown_files(vault, ["drafts"])
    assert markdown_files(vault, ["*.markdown", "ops/run*"]) == ["drafts/wip.md", "ops/deploy.md", "setup/install.md"]


@pytest.mark.slow
def test_scan_fills_files_links_tags_chunks(conn, vault):
    summary = scan(conn, vault)
    assert (summary.added, summary.changed, summary.removed, summary.skipped) == (5, 0, 0, 0)
    files = {r["path"]: r for r in rows(conn, "SELECT * FROM vault_files")}
    deploy = files["ops/deploy.md"]
    assert deploy["title"] == "Deploy Guide"  # frontmatter wins over the heading
    assert deploy["frontmatter"] == {"title": "Deploy Guide", "tags": ["ops", "release"], "owner": "ada"}
    assert files["ops/runbook.md"]["title"] == "Runbook"  # first heading
    assert files["setup/install.md"]["title"] == "install"  # file name
    links = rows(
        conn,
        "SELECT target, target_path, heading, alias, kind FROM vault_links l JOIN vault_files f"
        " ON f.id = l.file_id WHERE f.path = 'ops/deploy.md' ORDER BY target, heading NULLS FIRST",
    )
    assert [tuple(r.values()) for r in links] == [
        ("../setup/install.md", "setup/install.md", "linux", "setup", "markdown"),
        ("Runbook", "ops/runbook.md", None, "the runbook", "wikilink"),
        ("Runbook", "ops/runbook.md", "Rollback", None, "wikilink"),
        ("missing note", None, None, None, "wikilink"),
    ]
    tags = [
        r["tag"]
        for r in rows(
            conn,
            "SELECT tag FROM vault_tags t JOIN vault_files f ON f.id = t.file_id"
            " WHERE f.path = 'ops/deploy.md' ORDER BY tag",
        )
    ]
    assert tags == ["ops", "ops/prod", "release", "shipping"]
    chunks = rows(
        conn,
        "SELECT ord, heading, content FROM vault_chunks c JOIN vault_files f ON f.id = c.file_id"
        " WHERE f.path = 'ops/deploy.md' ORDER BY ord",
    )
    assert [c["heading"] for c in chunks] == ["Deploying", "Deploying > Rollback"]
    assert "# not a heading" in chunks[0]["content"]  # a code line stays in its chunk
    assert rows(conn, "SELECT count(*) AS n FROM vault_chunks WHERE tsv @@ 'deploy'::tsquery")[0]["n"] >= 1


@pytest.mark.slow
def test_rescan_is_incremental(conn, vault):
    scan(conn, vault)
    again = scan(conn, vault)
    assert (again.added, again.changed, again.removed, again.unchanged) == (0, 0, 0, 5)
    # Touched but identical: counted unchanged, nothing re-chunked.
    ids_before = [r["id"] for r in rows(conn, "SELECT id FROM vault_chunks ORDER BY id")]
    os.utime(vault / "ops/runbook.md", (1, 1))
    assert scan(conn, vault).unchanged == 5
    assert [r["id"] for r in rows(conn, "SELECT id FROM vault_chunks ORDER BY id")] == ids_before
    write(vault, "ops/runbook.md", "# Runbook\n\nRestart the scheduler instead.\n")
    (vault / "setup/install.md").rename(vault / "setup/installing.md")
    (vault / "other.markdown").unlink()
    summary = scan(conn, vault)
    assert (summary.added, summary.changed, summary.removed, summary.unchanged) == (1, 1, 2, 2)
    assert {r["path"] for r in rows(conn, "SELECT path FROM vault_files")} == {
        "drafts/wip.md",
        "ops/deploy.md",
        "ops/runbook.md",
        "setup/installing.md",
    }
    # Nothing of the removed files is left behind.
    for table in ("vault_chunks", "vault_links", "vault_tags", "vault_postings"):
        orphans = rows(
            conn, f"SELECT count(*) AS n FROM {table} t LEFT JOIN vault_files f ON f.id = t.file_id WHERE f.id IS NULL"
        )
        assert orphans[0]["n"] == 0, table
    assert term_counts_are_exact(conn)
    assert search(conn, "scheduler", mode="keyword").hits[0].path == "ops/runbook.md"
    assert search(conn, "worker", mode="keyword").hits == []


@pytest.mark.slow
def test_long_note_is_indexed_to_its_end(conn, tmp_path):
    root = tmp_path / "long"
    paragraph = "Filler words about nothing in particular, repeated to make a very long note. " * 12
    body = "# Huge\n\n" + "\n\n".join(f"## Part {i}\n\n{paragraph}" for i in range(1200))
    body += "\n\n## The end\n\nThe zanzibar keyword appears only here.\n"
    write(root, "huge.md", body)
    assert len(body.encode()) > 1_100_000
    scan(conn, root)
    stats = rows(conn, "SELECT count(*) AS n, max(length(content)) AS longest FROM vault_chunks")[0]
    assert stats["n"] > 1200 and stats["longest"] <= MAX_CHUNK
    (hit,) = search(conn, "zanzibar", mode="keyword").hits
    assert hit.path == "huge.md" and hit.heading == "Huge > The end" and "zanzibar" in hit.snippet


@pytest.mark.slow
def test_bad_files_are_skipped_with_warnings(conn, tmp_path):
    root = tmp_path / "bad"
    write(root, "good.md", "# Good\n\nfine text\n")
    (root / "latin1.md").write_bytes("caf\xe9 au lait".encode("latin-1"))
    (root / "dangling.md").symlink_to(root / "nowhere.md")
    write(root, "broken-front.md", "---\ntitle: [unclosed\n---\n# Body\n\nstill searchable quokka\n")
    write(root, "unclosed-front.md", "---\ntitle: x\n\nno end marker\n")
    summary = scan(conn, root)
    assert summary.skipped == 2 and summary.added == 3
    joined = "\n".join(summary.warnings)
    assert "latin1.md: not valid UTF-8" in joined and "dangling.md: unreadable" in joined
    assert "broken-front.md: broken frontmatter" in joined and "unclosed-front.md: frontmatter block" in joined
    assert search(conn, "quokka", mode="keyword").hits[0].path == "broken-front.md"


@pytest.mark.slow
def test_another_root_needs_replace(conn, vault, tmp_path):
    scan(conn, vault)
    other = tmp_path / "other"
    write(other, "a.md", "# A\n")
    with pytest.raises(InputError, match="pass --replace"):
        scan(conn, other)
    assert scan(conn, other, replace=True).removed == 5
    with pytest.raises(InputError, match="does not exist"):
        scan(conn, tmp_path / "absent", replace=True)


@pytest.mark.slow
def test_kill_mid_scan_then_rescan_finishes_cleanly(org, tmp_path):
    root = tmp_path / "many"
    for i in range(3000):
        write(root, f"d{i % 30}/note{i}.md", f"# Note {i}\n\nBody of note {i} about topic{i % 7}.\n\n## More\n\nx{i}\n")
    code = (
        "import sys; from pathlib import Path; from cli_org.config import Settings;"
        "from cli_org.db.connect import connect; from cli_org.vault.scan import scan;"
        "scan(connect(Settings.from_env()), Path(sys.argv[1]))"
    )
    env = {**os.environ, **org.env}
    proc = subprocess.Popen([sys.executable, "-c", code, str(root)], env=env)
    with connect(org.settings, autocommit=True) as conn:
        deadline = time.time() + 60
        while time.time() < deadline:
            n = conn.execute("SELECT count(*) AS n FROM vault_files").fetchone()["n"]
            if n > 0:
                break
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        partial = conn.execute("SELECT count(*) AS n FROM vault_files").fetchone()["n"]
        assert 0 < partial < 3000, "the scan was not interrupted midway"
        summary = scan(conn, root)
        assert summary.added == 3000 - partial and summary.unchanged == partial
        check = conn.execute("""
            SELECT (SELECT count(*) FROM vault_files) AS files,
                   (SELECT count(*) FROM vault_chunks) AS chunks,
                   (SELECT count(DISTINCT (file_id, ord)) FROM vault_chunks) AS distinct_chunks,
                   (SELECT count(*) FROM vault_files f WHERE length <> (
                        SELECT coalesce(sum(tf), 0) FROM vault_postings p WHERE p.file_id = f.id)) AS bad_lengths
        """).fetchone()
        assert term_counts_are_exact(conn)
    assert check == {"files": 3000, "chunks": 6000, "distinct_chunks": 6000, "bad_lengths": 0}


@pytest.mark.slow
def test_cli_scan_summary_and_json(cli, vault):
    code, out, _ = cli("vault", "scan", str(vault))
    assert code == 0 and "added 5, changed 0, removed 0, unchanged 0" in out
    code, out, _ = cli("vault", "scan", str(vault), "--json")
    data = json.loads(out)
    assert data["scan"]["unchanged"] == 5 and data["embed"] is None
    code, _, err = cli("vault", "scan", str(vault / "nope"), "--replace")
    assert code == 1 and "does not exist" in err


def test_cli_scan_off_a_terminal_prints_plain_progress_lines(cli, vault, monkeypatch):
    """In a log or a pipe (the test's stderr is no terminal) a long scan or embed is not
    silent: plain progress lines, at most one per PLAIN_EVERY_SECONDS (here: every call)."""
    from cli_org.faces.cli import common

    code, _, err = cli("vault", "scan", str(vault))
    assert code == 0 and err == ""  # work shorter than the interval prints nothing
    (vault / "new.md").write_text("# New\n\nA note added since.\n")
    monkeypatch.setattr(common, "PLAIN_EVERY_SECONDS", 0.0)
    code, out, err = cli("vault", "scan", str(vault))
    assert code == 0 and "added 1" in out
    lines = err.splitlines()
    assert lines and "scan: 6/6" in lines and all(line.startswith("scan: ") for line in lines)
    assert "\r" not in err and "\033" not in err


@pytest.mark.slow
def test_cli_search_without_embeddings_falls_back(cli, vault):
    cli("vault", "scan", str(vault))
    code, out, err = cli("search", "rollback", "--json")
    data = json.loads(out)
    assert code == 0 and data["used"] == "keyword" and "no embeddings yet" in err
    assert {h["path"] for h in data["hits"]} == {"ops/runbook.md", "ops/deploy.md"}
    hit = data["hits"][0]
    assert set(hit) >= {"path", "title", "heading", "snippet", "score", "keyword_score", "semantic_score"}
    code, out, _ = cli("search", "rollback", "--mode", "keyword")
    assert code == 0 and "ops/runbook.md" in out
    assert cli("search", "zzzqqq-nothing", "--mode", "keyword")[1].strip() == "no matches"


def test_chunks_never_exceed_the_bound_and_lose_nothing():
    from cli_org.vault.markdown import parse_note

    one_line = "x" * (2 * MAX_CHUNK + 17)
    sentences = " ".join(f"Sentence number {i} says a little." for i in range(200))
    note = parse_note(f"# T\n\n{one_line}\n\n{sentences}\n\nshort tail\n", "t.md")
    assert all(len(c.content) <= MAX_CHUNK for c in note.chunks)
    text = "".join(c.content for c in note.chunks)
    assert text.count("x") == len(one_line) and text.count("Sentence number") == 200 and "short tail" in text


def _private(conn) -> dict[str, bool]:
    found = {r["path"]: r["private"] for r in conn.execute("SELECT path, private FROM vault_files")}
    conn.rollback()  # the next scan wants an idle connection
    return found


@pytest.mark.slow
def test_a_rescan_that_would_make_private_notes_public_is_refused_then_named(org, tmp_path):
    root = tmp_path / "vault"
    write(root, "ops.md", "# Ops\n\nPublic.\n")
    for i in range(7):
        write(root, f"secret/n{i}.md", f"# Secret {i}\n\nKept private.\n")
    with connect(org.settings) as conn:
        assert scan(conn, root, private=["secret/"]).made_public == 0
        before = _private(conn)
        assert sum(before.values()) == 7
        # Without ORG_RECALL_EXCLUDE (the usual slip): refused, nothing changed.
        with pytest.raises(InputError) as refused:
            scan(conn, root)
        message = str(refused.value)
        assert message.startswith("this scan would make 7 once-private note(s) (secret/n0.md, secret/n1.md, ")
        assert "secret/n4.md and 2 more) public: ORG_RECALL_EXCLUDE no longer holds secret/;" in message
        assert "ORG_RECALL_EXCLUDE=secret/ as the last scan had it" in message and "--make-public" in message
        assert _private(conn) == before
        assert [r["prefix"] for r in conn.execute("SELECT prefix FROM vault_private_prefixes")] == ["secret/"]
        conn.rollback()
        # The near misses: the same list, or one that keeps more private, needs no flag.
        assert scan(conn, root, private=["secret/"]).made_public == 0
        assert scan(conn, root, private=["secret/", "ops.md"]).made_public == 0
        assert _private(conn)["ops.md"] is True
        with pytest.raises(InputError, match=r"make 1 once-private note\(s\) \(ops.md\) public"):
            scan(conn, root, private=["secret/"])
        # Confirmed: it goes on and says which notes it made public.
        done = scan(conn, root, private=["secret/n6.md"], make_public=True)
        assert done.made_public == 7 and done.made_public_paths == ["ops.md"] + [f"secret/n{i}.md" for i in range(4)]
        assert [p for p, private in _private(conn).items() if private] == ["secret/n6.md"]


@pytest.mark.slow
def test_cli_scan_refuses_to_publish_and_names_what_it_published(cli, vault, monkeypatch):
    monkeypatch.setenv("ORG_RECALL_EXCLUDE", "drafts/,setup/")
    assert cli("vault", "scan", str(vault))[0] == 0
    monkeypatch.delenv("ORG_RECALL_EXCLUDE")
    code, out, err = cli("vault", "scan", str(vault))
    assert (
        code == 1
        and out == ""
        and err.startswith(
            "cli-org: this scan would make 2 once-private note(s) (drafts/wip.md, setup/install.md) public"
        )
    )
    code, out, _ = cli("vault", "scan", str(vault), "--make-public")
    assert code == 0 and out.splitlines()[-1] == "made public: 2 once-private note(s) (drafts/wip.md, setup/install.md)"
    monkeypatch.setenv("ORG_RECALL_EXCLUDE", "drafts/")
    cli("vault", "scan", str(vault))
    monkeypatch.delenv("ORG_RECALL_EXCLUDE")
    data = json.loads(cli("vault", "scan", str(vault), "--make-public", "--json")[1])
    assert data["scan"]["made_public"] == 1 and data["scan"]["made_public_paths"] == ["drafts/wip.md"]
