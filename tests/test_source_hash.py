"""Stale by content (issue 36, item 5): `remember` stores a hash of the cited file (or lines);
`eval stale` and `tidy` judge the source by it, whatever the file's time. Through the
library, the CLI, MCP, the page, import, and a member's own SQL."""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import replace
from pathlib import Path

import pytest
from psycopg import errors as pgerr

from cli_org.db.connect import connect
from cli_org.errors import InputError
from cli_org.evaluation import stale as find_stale
from cli_org.store import facts, tidy
from cli_org.store.sources import MAX_HASHED_BYTES, Cited, changed, cited, source_hash
from cli_org.store.transfer import export_lines, import_lines
from tests.helpers import serve, text

LINES = "".join(f"line {n}\n" for n in range(1, 31))


def _sha(data: str | bytes) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def _tree(root: Path) -> Path:
    (root / "docs").mkdir(parents=True)
    (root / "docs/deploy.md").write_text(LINES)
    return root


def _edit(path: Path, new: str) -> None:
    """Change the file's content and put its modification time back as it was (a checkout
    does the like): only the content tells."""
    st = path.stat()
    path.write_text(new)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _stored(org, fact_id: int) -> str | None:
    with org.admin() as conn:
        return conn.execute("SELECT source_hash FROM memory_facts WHERE id = %s", (fact_id,)).fetchone()["source_hash"]


# --- the rule ---------------------------------------------------------------------------


def test_which_sources_are_hashed():
    assert cited("docs/deploy.md") == Cited("docs/deploy.md")
    assert cited("docs/deploy.md:12") == Cited("docs/deploy.md", 12, 12)
    assert cited("./docs/deploy.md:3-9") == Cited("./docs/deploy.md", 3, 9)
    for source in (
        "/etc/passwd",
        "~/.pgpass",
        "https://x.org/a.md",
        "#deploys",
        "t_12ab",
        "docs/",
        "a.md:0",
        "a.md:9-3",
    ):
        assert cited(source) is None, source
    assert cited(None) is None and cited("") is None


def test_the_hash_is_of_the_file_or_of_its_cited_lines(tmp_path):
    root = _tree(tmp_path)
    assert source_hash("docs/deploy.md", [root]) == _sha(LINES)
    assert source_hash("docs/deploy.md:2-3", [root]) == _sha("line 2\nline 3\n")
    assert source_hash("docs/deploy.md:30", [root]) == _sha("line 30\n")
    assert source_hash("docs/deploy.md:31", [root]) is None  # past the end: nothing cited there
    assert source_hash("docs/gone.md", [root]) is None
    vault = tmp_path / "vault"
    (vault / "notes").mkdir(parents=True)
    (vault / "notes/kept.md").write_text("kept\n")
    assert source_hash("notes/kept.md", [root, vault]) == _sha("kept\n")  # the next root


def test_hostile_files_get_no_hash_and_no_error(tmp_path):
    root = _tree(tmp_path / "root")
    secret = tmp_path / "secret.txt"
    secret.write_text("outside the checkout\n")
    (root / "docs/link.md").symlink_to(secret)
    (root / "linked").symlink_to(root / "docs")
    (root / "docs/big.log").write_bytes(b"x" * (MAX_HASHED_BYTES + 1))
    (root / "docs/fifo.md").parent.mkdir(exist_ok=True)
    os.mkfifo(root / "docs/fifo.md")
    for source in ("docs/link.md", "linked/deploy.md", "docs/big.log", "docs/fifo.md", "../secret.txt", "docs"):
        assert source_hash(source, [root]) is None, source
    (root / "docs/edge.log").write_bytes(b"y" * MAX_HASHED_BYTES)  # at the bound: hashed
    assert source_hash("docs/edge.log", [root]) == _sha(b"y" * MAX_HASHED_BYTES)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_another_users_private_file_gets_no_hash_and_a_readable_one_does(tmp_path):
    root = _tree(tmp_path / "root")
    for name, mode in (("private.md", 0o600), ("shared.md", 0o644)):
        (root / "docs" / name).write_text(f"{name} of another user\n")
        os.chown(root / "docs" / name, 65534, 65534)  # nobody
        os.chmod(root / "docs" / name, mode)
    assert source_hash("docs/private.md", [root]) is None  # read only by privilege: no verifier of it
    assert source_hash("docs/shared.md", [root]) == _sha(b"shared.md of another user\n")


def test_a_change_is_judged_by_content_alone(tmp_path):
    root = _tree(tmp_path)
    whole, lines = source_hash("docs/deploy.md", [root]), source_hash("docs/deploy.md:2-3", [root])
    assert whole and lines
    os.utime(root / "docs/deploy.md", (time.time() + 60, time.time() + 60))  # touched: same content
    assert changed("docs/deploy.md", whole, [root]) is None
    _edit(root / "docs/deploy.md", LINES.replace("line 20\n", "line twenty\n"))  # outside lines 2-3
    assert changed("docs/deploy.md:2-3", lines, [root]) is None
    change = changed("docs/deploy.md", whole, [root])
    assert change and (change.stored, change.now) == (whole, _sha(LINES.replace("line 20\n", "line twenty\n")))
    _edit(root / "docs/deploy.md", "line 1\n")  # the cited lines are gone
    assert changed("docs/deploy.md:2-3", lines, [root]).now is None
    (root / "docs/deploy.md").unlink()
    assert changed("docs/deploy.md", whole, [root]) is None  # missing: missing_source's to say
    assert changed("docs/deploy.md", None, [root]) is None  # never hashed: not judged here


# --- remember, eval stale and tidy -------------------------------------------------------


# Two claims of one file, far apart in words and meaning (a paraphrase would be refused: issue 36).
SAID = {"whole": "Deploys are described in the runbook", "lines": "Rollbacks take two commands"}


@pytest.mark.slow
def test_remember_stores_the_hash_and_eval_stale_judges_by_it(org, cli, tmp_path, monkeypatch):
    root = _tree(tmp_path)
    monkeypatch.setenv("ORG_ROOT", str(root))
    monkeypatch.delenv("ORG_VAULT", raising=False)
    ids = {}
    for name, source in (("whole", "docs/deploy.md"), ("lines", "docs/deploy.md:2-3")):
        code, out, err = cli("remember", name, SAID[name], "--source", source, "--json", agent="bot")
        assert code == 0, err
        ids[name] = json.loads(out)["id"]
    assert _stored(org, ids["whole"]) == _sha(LINES) and _stored(org, ids["lines"]) == _sha("line 2\nline 3\n")

    later = time.time() + 3600  # touched after the facts were written: the time says changed
    os.utime(root / "docs/deploy.md", (later, later))
    with connect(org.settings) as conn:
        assert find_stale(conn, root).items == []

    _edit(root / "docs/deploy.md", LINES.replace("line 20\n", "line twenty\n"))  # outside the cited lines
    with connect(org.settings) as conn:
        items = find_stale(conn, root).items
    assert [(i.where, i.problem.split(" (")[0]) for i in items] == [(f"fact #{ids['whole']}", "source content changed")]
    assert f"hash {_sha(LINES)[:12]} then" in items[0].problem

    _edit(root / "docs/deploy.md", LINES.replace("line 3\n", "line three\n"))
    code, out, _ = cli("eval", "stale", "--root", str(root))
    assert code == 0 and f"fact #{ids['lines']}: `docs/deploy.md:2-3` source cited lines changed" in out


@pytest.mark.slow
def test_a_fact_without_a_hash_is_judged_by_time_as_before(org, tmp_path):
    root = _tree(tmp_path)
    old = facts.remember(org.writer("bot"), "deploys", "Deploys are in the runbook", source="docs/deploy.md").id
    assert _stored(org, old) is None  # written without one (as before migration 0042)
    later = time.time() + 3600
    os.utime(root / "docs/deploy.md", (later, later))
    with connect(org.settings) as conn:
        (item,) = find_stale(conn, root).items
    assert (item.where, item.problem) == (f"fact #{old}", "source changed after the fact was written")


@pytest.mark.slow
def test_a_symlink_or_huge_source_is_written_without_a_hash(org, cli, tmp_path, monkeypatch):
    root = _tree(tmp_path / "root")
    (tmp_path / "secret.txt").write_text("not the checkout's\n")
    (root / "docs/link.md").symlink_to(tmp_path / "secret.txt")
    (root / "docs/huge.log").write_bytes(b"z" * (MAX_HASHED_BYTES + 1))
    monkeypatch.setenv("ORG_ROOT", str(root))
    for subject, source in (("link", "docs/link.md"), ("huge", "docs/huge.log"), ("gone", "docs/gone.md")):
        code, out, err = cli(
            "remember", subject, f"The {subject} file holds the notes", "--source", source, "--json", agent="bot"
        )
        assert code == 0, err
        assert _stored(org, json.loads(out)["id"]) is None


@pytest.mark.slow
def test_tidy_lists_a_changed_source_for_review_and_apply_leaves_it(org, cli, tmp_path, monkeypatch):
    root = _tree(tmp_path)
    monkeypatch.setenv("ORG_ROOT", str(root))
    monkeypatch.delenv("ORG_VAULT", raising=False)
    code, out, err = cli(
        "remember",
        "deploys",
        "Deploys go out at night",
        "--source",
        "docs/deploy.md:1-2",
        "--project",
        "web",
        "--json",
        agent="bot",
    )
    fact = json.loads(out)["id"]
    assert cli("tidy", agent="bot")[1] == "nothing to tidy\n"
    _edit(root / "docs/deploy.md", "line one\n" + LINES)
    code, out, _ = cli("tidy", agent="bot")
    assert code == 0 and f"#{fact} deploys: " in out and "changed since it was written" in out
    assert "1 proposal(s) (1 to review by hand: --apply leaves those)" in out
    code, out, _ = cli("tidy", "--apply", "--json", agent="bot")
    (p,) = json.loads(out)["proposals"]
    assert (p["action"], p["fact_id"], p["done"], p["error"]) == ("changed_source", fact, None, None)
    assert p["evidence"]["stored"] == _sha("line 1\nline 2\n") and p["evidence"]["now"] == _sha("line one\nline 1\n")
    with org.as_agent("bot") as conn:
        assert facts.show_fact(conn, fact).fact.current  # a changed file does not make the fact false
    with org.admin() as conn:
        assert conn.execute("SELECT count(*) AS n FROM memory_tidy_log").fetchone()["n"] == 0
    # A fact whose file is gone is still proposed as missing (and retired on apply), not as changed.
    (root / "docs/deploy.md").unlink()
    with org.as_agent("bot") as conn:
        assert [p.action for p in tidy.tidy(conn, roots=[root], project="web").proposals] == ["missing_source"]


@pytest.mark.slow
def test_the_tidy_page_shows_a_changed_source_as_needing_review(org, web, tmp_path):
    root = _tree(tmp_path)
    fact = facts.remember(
        org.writer("bot"), "deploys", "Deploys go out at night", source="docs/deploy.md", source_hash="0" * 64
    ).id
    org.settings = replace(org.settings, root=str(root), vault=None)
    client = web("lead")
    page = client.get("/facts/tidy")
    assert page.status_code == 200
    assert "needs review" in page.text and f'href="/facts/{fact}"' in page.text
    assert f'name="fact" value="{fact}"' not in page.text  # nothing to tick: applying leaves it
    api = client.get("/api/facts/tidy").json()
    assert [(p["action"], p["fact_id"]) for p in api["proposals"]] == [("changed_source", fact)]


@pytest.mark.slow
def test_org_remember_stores_the_hash(org, tmp_path):
    root = _tree(tmp_path)

    async def script(s):
        return await s.call_tool(
            "org_remember", {"subject": "deploys", "claim": "Deploys are in the runbook", "source": "docs/deploy.md:5"}
        )

    result = serve(org, script, ORG_ROOT=str(root))
    assert not result.is_error, text(result)
    with org.admin() as conn:
        row = conn.execute("SELECT source_hash FROM memory_facts WHERE subject = 'deploys'").fetchone()
    assert row["source_hash"] == _sha("line 5\n")


# --- hostile input: a member's SQL, an import ---------------------------------------------


@pytest.mark.slow
def test_a_member_cannot_insert_a_malformed_hash(org):
    insert = (
        "INSERT INTO memory_facts (subject, claim, source, author, source_hash)"
        " VALUES ('deploys', %s, 'docs/a.md', 'bot', %s)"
    )
    with org.login(f"{org.name}_bot", "bot-pw") as bot:
        for bad in ("0" * 63, "0" * 65, "G" * 64, "A" * 64, "' OR 1=1 --" + "0" * 53, ""):
            with pytest.raises(pgerr.CheckViolation):
                bot.execute(insert, (f"Claim with hash {len(bad)}", bad))
            bot.rollback()
        bot.execute(insert, ("A claim with a well formed hash", "a" * 64))  # the near miss
        bot.commit()
        with pytest.raises(pgerr.InsufficientPrivilege):  # and never changed afterwards
            bot.execute("UPDATE memory_facts SET source_hash = %s", ("b" * 64,))


@pytest.mark.slow
def test_export_carries_the_hash_and_import_refuses_a_crafted_one(org):
    fact = facts.remember(
        org.writer("bot"), "deploys", "Deploys go out at night", source="docs/a.md", source_hash="c" * 64
    ).id
    with org.admin() as conn:
        lines = export_lines(conn)[0]
    (record,) = [json.loads(line) for line in lines if json.loads(line).get("kind") == "fact"]
    assert record["id"] == fact and record["source_hash"] == "c" * 64
    header = lines[0]
    with org.admin() as conn:  # importing its own export: present, unchanged
        assert {c.kind: c.present for c in import_lines(conn, lines).kinds}["fact"] == 1
    crafted = {**record, "id": fact + 100, "claim": "Deploys go out at noon", "source_hash": "not a hash"}
    with org.admin() as conn, pytest.raises(InputError, match="source_hash"):
        import_lines(conn, [header, json.dumps(crafted)])
    older = {k: v for k, v in record.items() if k != "source_hash"}  # a file from before migration 0042
    with org.admin() as conn:
        found = import_lines(conn, [header, json.dumps({**older, "id": fact + 200, "claim": "Deploys go out at dawn"})])
        assert {c.kind: c.added for c in found.kinds}["fact"] == 1
