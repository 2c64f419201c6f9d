"""Typed links through the faces (issue 36, item 3): `cli-org link` and `unlink`, the MCP tools
org_link and org_unlink over a real stdio session, `facts show` (text and --json), the fact's
web page and its JSON, the activity feed, export and import (a crafted file too), and erase.
Each as a real agent: the team of tests/databases.py (boss owns, lead leads bot, other)."""

from __future__ import annotations

import json

import pytest

from cli_org.errors import InputError
from cli_org.store import activity, facts, links
from cli_org.store.erase import erase_fact
from cli_org.store.transfer import export_lines, import_lines
from tests.helpers import serve, text


def _fact(org, agent, subject, claim):
    return facts.remember(org.writer(agent), subject, claim, source="docs/deploy.md").id


@pytest.fixture
def pair(org):
    """Two current facts of different authors: bot's deploy rule and other's release cut."""
    a = _fact(org, "bot", "deploys", "Deploys need the release branch green.")
    b = _fact(org, "other", "releases", "The release branch is cut every Monday.")
    return a, b


def _ok(cli, *args, agent="bot"):
    code, out, err = cli(*args, agent=agent)
    assert (code, err) == (0, ""), err
    return out


def _refused(cli, *args, agent="bot", code=1):
    got, out, err = cli(*args, agent=agent)
    assert (got, out) == (code, ""), err
    assert err.startswith("cli-org: ") and err.count("\n") == 1, err
    return err


def test_link_and_unlink_through_the_cli_and_facts_show_both_ways(org, cli, pair):
    a, b = pair
    out = _ok(cli, "link", str(a), "depends-on", str(b), "--reason", "the cut decides when")
    made = int(out.split()[1].rstrip(":"))
    assert out == f"link {made}: #{a} depends-on #{b}\n"
    again = json.loads(_ok(cli, "link", str(a), "depends-on", str(b), "--json"))
    assert (again["id"], again["author"], again["reason"]) == (made, "bot", "the cut decides when")
    # other confirms its own fact's neighbour in its own words: "confirmed by other"
    with org.as_agent("other") as conn:
        links.add_link(conn, None, "confirms", a, "Deploys wait for a green release branch")
        conn.commit()

    shown = _ok(cli, "facts", "show", str(a))
    assert "  confirmed by other\n" in shown
    assert f"link {made}: this depends-on #{b} releases: The release branch is cut every Monday. [bot, " in shown
    assert shown.rstrip().endswith("]: Deploys wait for a green release branch")
    assert "other confirms this in its own words" in shown
    other_side = _ok(cli, "facts", "show", str(b), agent="other")
    assert f"#{a} deploys: Deploys need the release branch green. depends-on this [bot, " in other_side
    assert "the cut decides when" in other_side and "confirmed by" not in other_side

    record = json.loads(_ok(cli, "facts", "show", str(a), "--json"))
    assert record["confirmed_by"] == ["other"]
    out_link = next(x for x in record["links"] if x["id"] == made)
    assert (out_link["direction"], out_link["kind"], out_link["other_id"], out_link["author"]) == (
        "out",
        "depends-on",
        b,
        "bot",
    )
    assert out_link["other_subject"] == "releases" and out_link["other_current"] is True
    into = json.loads(_ok(cli, "facts", "show", str(b), "--json"))["links"]
    assert [(x["id"], x["direction"], x["other_id"]) for x in into] == [(made, "in", a)]

    # other may not remove bot's link; bot's team lead may; then it is gone from both pages
    assert f"agent other may not remove link {made}" in _refused(cli, "unlink", str(made), "not so", agent="other")
    removed = json.loads(_ok(cli, "unlink", str(made), "the cut moved to Tuesdays", "--json", agent="lead"))
    assert (removed["removed_by"], removed["removed_reason"]) == ("lead", "the cut moved to Tuesdays")
    assert f"link {made}" not in _ok(cli, "facts", "show", str(a))
    assert "links:" not in _ok(cli, "facts", "show", str(b), agent="other")
    assert "already removed" in _refused(cli, "unlink", str(made), "twice", agent="lead")


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("A", "supersedes", "B"), 2, "invalid value for 'KIND': 'supersedes' is not one of 'depends-on'"),
        (("0", "explains", "B"), 2, "invalid value for 'FROM'"),
        (("A", "explains", "nine"), 2, "invalid value for 'TO'"),
        (("A", "explains", "999999"), 1, "no fact with id 999999"),
        (("A", "explains", "A"), 1, "cannot be linked to itself"),
        (("A", "explains", "B", "--reason", "ghp_" + "a" * 36), 1, "reason"),
        (("A", "explains", "B", "--reason", "line one\nline two"), 1, "reason"),
    ],
)
def test_bad_links_are_one_line_refusals(org, cli, pair, args, code, message):
    a, b = pair
    argv = [str(a) if x == "A" else str(b) if x == "B" else x for x in args]
    assert message in _refused(cli, "link", *argv, code=code)
    with org.admin() as conn:
        assert conn.execute("SELECT count(*) AS n FROM memory_links").fetchone()["n"] == 0


def test_a_retired_fact_is_not_linked_and_bad_unlinks_are_refused(org, cli, pair):
    a, b = pair
    facts.forget(org.writer("other"), b, "the cut is on demand now")
    assert f"fact {b} is retired" in _refused(cli, "link", str(a), "explains", str(b))
    assert "no link with id 42" in _refused(cli, "unlink", "42", "why not")
    assert "say why" in _refused(cli, "unlink", "42", "  ")
    assert "invalid value for 'LINK_ID'" in _refused(cli, "unlink", "0", "why", code=2)


def test_link_help_explains_every_kind(cli):
    code, out, _ = cli("link", "--help")
    assert code == 0
    for kind in ("depends-on", "explains", "confirms", "contradicts"):
        assert f"\n    {kind}" in out or f"  {kind} " in out, kind
    assert "Supersession is not a link" in out


@pytest.mark.slow
def test_link_and_unlink_over_a_real_mcp_session(org, pair):
    a, b = pair

    async def as_bot(s):
        made = await s.call_tool("org_link", {"from_id": a, "kind": "contradicts", "to_id": b, "reason": "Mondays?"})
        bad = await s.call_tool("org_link", {"from_id": a, "kind": "supersedes", "to_id": b})
        missing = await s.call_tool("org_link", {"from_id": a, "kind": "explains", "to_id": 999999})
        return made, bad, missing

    made, bad, missing = serve(org, as_bot, agent="bot")
    assert not made.is_error and text(made).startswith("link ") and text(made).endswith(f"#{a} contradicts #{b}")
    link_id = int(text(made).split()[1].rstrip(":"))
    assert bad.is_error and "invalid value for 'kind'" in text(bad) and "\n" not in text(bad)
    assert missing.is_error and text(missing) == "no fact with id 999999"

    async def as_other(s):
        return await s.call_tool("org_unlink", {"id": link_id, "why": "mine is right"})

    refused = serve(org, as_other, agent="other")
    assert refused.is_error and f"may not remove link {link_id}" in text(refused)

    async def as_bot_again(s):
        return await s.call_tool("org_unlink", {"id": link_id, "why": "dismissed: both hold"})

    removed = serve(org, as_bot_again, agent="bot")
    assert not removed.is_error and text(removed) == f"unlinked {link_id} (#{a} contradicts #{b})"
    with org.admin() as conn:
        row = conn.execute("SELECT author, removed_by, removed_reason FROM memory_links WHERE id = %s", (link_id,))
        assert row.fetchone() == {"author": "bot", "removed_by": "bot", "removed_reason": "dismissed: both hold"}


def test_the_fact_page_shows_links_both_ways_and_contradictions(org, web, pair):
    a, b = pair
    c = _fact(org, "other", "deploys", "Deploys may go out with a red release branch.")
    with org.as_agent("bot") as conn:
        depends = links.link(conn, a, "depends-on", b, reason="the cut decides when").id
        clash = links.link(conn, c, "contradicts", a, reason="red or green?").id
    client = web("bot")
    page = client.get(f"/facts/{a}").text
    assert "<h2>Links</h2>" in page
    assert f'this fact <strong>depends-on</strong> <a href="/facts/{b}">#{b}</a> releases' in page
    assert (
        f'<li class="kind-contradicts"><strong class="contradiction">Contradiction:</strong> <a href="/facts/{c}">'
        in page
    )
    assert f"link {clash} by" in page and "red or green?" in page and "A contradiction waits for a person" in page
    into = client.get(f"/facts/{b}").text
    assert (
        f'<a href="/facts/{a}">#{a}</a> deploys: Deploys need the release branch green. <strong>depends-on</strong>'
        in into
    )
    assert "Contradiction" not in into
    api = client.get(f"/api/facts/{a}").json()
    assert [(x["id"], x["direction"], x["kind"], x["other_id"]) for x in api["links"]] == [
        (depends, "out", "depends-on", b),
        (clash, "in", "contradicts", c),
    ]
    assert api["confirmed_by"] == []
    assert "No links" in client.get(f"/facts/{_fact(org, 'bot', 'misc', 'The staging host reboots nightly.')}").text


def test_the_activity_feed_says_linked_and_unlinked_with_the_harness(org, cli, web, pair):
    a, b = pair
    with org.as_agent("bot") as conn:
        made = links.link(conn, a, "depends-on", b, reason="the cut decides when", via="claude-code@box").id
    with org.as_agent("boss") as conn:
        links.unlink(conn, made, "dismissed", via="codex@desk")
    with org.as_agent("other") as conn:
        events = activity.feed(conn, kinds=["links"]).events
    assert [(e.kind, e.who, e.via, e.fact_id, e.other, e.detail) for e in events] == [
        ("unlinked", "boss", "codex@desk", a, b, f"depends-on #{b}: dismissed"),
        ("linked", "bot", "claude-code@box", a, b, f"depends-on #{b}: the cut decides when"),
    ]
    out = _ok(cli, "activity", "--kind", "links", agent="other")
    assert f"linked     bot via claude-code@box  #{a} deploys: depends-on #{b}: the cut decides when" in out
    assert f"unlinked   boss via codex@desk  #{a} deploys: depends-on #{b}: dismissed" in out
    assert "linked" in _ok(cli, "activity", agent="other")  # a write: in the default feed
    page = web("other").get("/activity", params={"kind": "links"}).text
    assert f'<a href="/facts/{b}" title="the linked fact">&rarr; #{b}</a>' in page and "kind-unlinked" in page
    # filtered by who and by harness
    with org.as_agent("other") as conn:
        assert [e.kind for e in activity.feed(conn, kinds=["links"], agent="boss").events] == ["unlinked"]
        assert [e.kind for e in activity.feed(conn, kinds=["links"], via="claude-code").events] == ["linked"]


def _export(org) -> list[str]:
    with org.admin() as conn:
        return export_lines(conn)[0]


def _import(org, lines: list[str]):
    with org.admin() as conn:
        return import_lines(conn, lines)


def _links(org) -> list[dict]:
    with org.admin() as conn:
        return conn.execute("SELECT * FROM memory_links ORDER BY id").fetchall()


@pytest.mark.slow
def test_export_and_import_carry_links_and_a_crafted_one_is_refused(org, pair):
    a, b = pair
    with org.as_agent("bot") as conn:
        kept = links.link(conn, a, "depends-on", b, reason="the cut decides when", via="claude-code@box").id
        gone = links.link(conn, a, "explains", b).id
        links.unlink(conn, gone, "not an explanation", via="claude-code@box")
    with org.as_agent("other") as conn:
        links.add_link(conn, None, "confirms", a, "Deploys wait for a green branch")
        conn.commit()
    lines = _export(org)
    records = [json.loads(line) for line in lines if '"kind": "link"' in line]
    assert [r["id"] for r in records] == [kept, gone, kept + 2]
    assert records[1]["removed_by"] == "bot" and records[1]["removed_via"] == "claude-code@box"
    before = _links(org)
    # Into the same database: all present, nothing changed.
    counts = {c.kind: (c.added, c.present, c.conflicting) for c in _import(org, lines).kinds}
    assert counts["link"] == (0, 3, 0)
    # Taken out and brought back: the same rows, ids, authors, times and removals.
    with org.admin() as conn:
        conn.execute("DELETE FROM memory_links")
        conn.commit()
    assert {c.kind: c.added for c in _import(org, lines).kinds}["link"] == 3
    assert _links(org) == before
    with org.as_agent("bot") as conn:  # the identity follows the imported ids
        assert links.link(conn, b, "explains", a).id == kept + 3

    header, link = lines[0], records[0]
    for crafted, why in (
        ({**link, "id": 900, "to_id": 999999}, "to_id 999999 is no fact"),
        ({**link, "id": 900, "from_id": 999998, "to_id": b}, "from_id 999998 is no fact"),
        ({**link, "id": 900, "author": "mallory"}, "author 'mallory' is no agent"),
        ({**link, "id": 900, "removed_by": "other", "removed_at": link["created_at"]}, "agent other may not remove"),
        ({**link, "id": 900, "link_kind": "supersedes"}, "memory_links_kind_check|violates check"),
        ({**link, "id": 900, "from_id": None, "link_kind": "depends-on"}, "violates check"),
        ({**link, "id": 900, "reason": "ghp_" + "a" * 36}, "reason"),
        ({**link, "id": 900, "via": "nobody\nforged@x"}, "via"),
        ({**link, "id": 0}, "id 0 is not an id"),
    ):
        with pytest.raises(InputError, match=why):
            _import(org, [header, json.dumps({**crafted, "kind": "link"})])
    with org.admin() as conn:
        assert conn.execute("SELECT count(*) AS n FROM memory_links WHERE id = 900").fetchone()["n"] == 0


def test_erase_removes_a_secret_quoted_in_a_link_reason(org, cli, pair):
    a, b = pair
    marker = "quokka-lantern-7731"  # a leaked bucket name: nothing the write scan refuses
    leaked = _fact(org, "bot", "exports", f"The nightly export reads bucket {marker} first.")
    with org.as_agent("other") as conn:
        quoted = links.link(conn, b, "explains", leaked, reason=f"the cut runs before {marker} is read").id
        removed = links.link(conn, a, "depends-on", leaked).id
        links.unlink(conn, removed, f"it does not read {marker}")
    done = erase_fact(org.writer("boss"), leaked, "a leaked bucket name", also=[marker])
    assert done.places.get("links") == 2
    rows = {r["id"]: r for r in _links(org)}
    assert marker not in json.dumps([rows[quoted]["reason"], rows[removed]["removed_reason"]])
    assert rows[quoted]["reason"] == "the cut runs before [erased] is read"
    assert rows[removed]["removed_reason"] == "it does not read [erased]"
    assert marker not in "\n".join(_export(org))
