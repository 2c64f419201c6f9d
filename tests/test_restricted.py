"""A restricted project (issue 33, item 8; migration 0035): an owner restricts project `acme`
to `bot`. Its rows are then read only by bot, bot's team lead (`lead`) and the owners
(`boss`, the admin); `other` reads the database as if the project did not exist, on every
path: its own SQL login, recall, search, the context block, the MCP tools, the web page, the
activity feed. Writes into it by anyone else are refused in one line."""

from __future__ import annotations

import json

import psycopg
import pytest
from psycopg import errors as pgerr
from psycopg import sql as pgsql

from cli_org.store import erase, facts, links, pins, todos
from cli_org.store import projects as projects_lib

pytestmark = pytest.mark.slow

SECRET = "Acme deploys on Fridays only"
SECRET_WORD = "Fridays"


def _seed(org) -> dict[str, int]:
    """acme restricted to bot, with a row in every table that holds a project's data."""
    with org.admin() as conn:
        projects_lib.restrict(conn, "acme", ["bot"])
    bot = org.writer("bot")
    ids = {"fact": facts.remember(bot, "client", SECRET, source="docs/acme.md", project="acme").id}
    gone = facts.remember(bot, "client", "Acme invoices monthly", source="docs/acme.md", project="acme").id
    facts.forget(bot, gone, "they changed it")
    facts.restore(bot, gone, "it was right")
    pins.pin(bot, ids["fact"])
    links.link(bot, gone, "explains", ids["fact"], reason="monthly invoices explain the deploy day")
    leaked = facts.remember(
        bot, "client", "Acme's portal login is kept in the vault", source="docs/acme.md", project="acme"
    ).id
    with org.as_agent("boss") as boss:
        erase.erase_fact(boss, leaked, "it named a login")
    ids["todo"] = todos.add_todo(bot, "Send Acme the Friday deploy notes", project="acme").id
    with org.admin() as conn:
        # The rows a harness or an import writes, written here as the admin: on a team server
        # (no superuser) forced row-level security binds the admin too, so it is lifted inside
        # this transaction and put back before it commits, as an import does (store/transfer.py).
        forced = [
            r["relname"]
            for r in conn.execute(
                "SELECT relname FROM pg_class WHERE relforcerowsecurity AND relnamespace = 'public'::regnamespace"
            )
        ]
        for table in forced:
            conn.execute(f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY")
        f = ids["fact"]
        if org.server.vectors:  # a team server without pgvector has no vectors table
            conn.execute(
                "INSERT INTO memory_fact_vectors (fact_id, model, computed_by, embedding)"
                " VALUES (%s, 'm', 'bot', array_fill(0.1::real, ARRAY[384])::vector)",
                (f,),
            )
        conn.execute(
            "INSERT INTO memory_tidy_log (actor, action, fact_id, kept_id, evidence)"
            " VALUES ('bot', 'merge', %s, %s, '{}')",
            (gone, f),
        )
        event = conn.execute(
            "INSERT INTO recall_events (agent, project, query, arms, hits, chars, ms)"
            " VALUES ('bot', 'acme', 'when does acme deploy', '{fact}', 1, 30, 5) RETURNING id"
        ).fetchone()["id"]
        conn.execute(
            "INSERT INTO recall_hits (event_id, agent, rank, arm, fact_id, text) VALUES (%s, 'bot', 1, 'fact', %s, %s)",
            (event, f, SECRET),
        )
        session = conn.execute(
            "INSERT INTO archive_sessions (harness, external_id, project, title)"
            " VALUES ('claude-code', 'acme-1', 'acme', 'acme work') RETURNING id"
        ).fetchone()["id"]
        message = conn.execute(
            "INSERT INTO archive_messages (session_id, source_key, position, part, kind, text, raw)"
            " VALUES (%s, 'k1', 1, 0, 'user', %s, '{}') RETURNING id",
            (session, SECRET),
        ).fetchone()["id"]
        # bot's proposal (tests/test_proposals.py: another's own proposal, hidden by the restriction)
        conn.execute(
            "INSERT INTO memory_proposals (session_id, message_key, agent, project, subject, claim, kind, why,"
            " score, claim_key) VALUES (%s, 'k1', 'bot', 'acme', 'deploys', 'Acme deploys on Fridays.', 'rule',"
            " 'correction', 1, 'acme-key')",
            (session,),
        )
        judged = conn.execute(
            "INSERT INTO quoted_sessions (session_id, dropped, rule_version, newest, messages, calls)"
            " VALUES (%s, '{}', 1, %s, 1, 1) RETURNING id",
            (session, message),
        ).fetchone()["id"]
        conn.execute(
            "INSERT INTO quoted_recalls (judged, call_message, result_message) VALUES (%s, %s, %s)",
            (judged, message, message),
        )
        conn.execute(
            "INSERT INTO quoted_hits (judged, call_message, ordinal, arm, key, quoted, how)"
            " VALUES (%s, %s, 1, 'fact', %s, true, 'id')",
            (judged, message, str(f)),
        )
        conn.execute(
            "INSERT INTO eval_runs (name, project, k, summary, cases, author)"
            " SELECT 'acme-run', 'acme', k, summary, cases, NULL FROM eval_runs LIMIT 0"
        )
        conn.execute(  # what a refresh of the review list stores (store/review.py)
            "INSERT INTO memory_review_items (kind, fact_id, detail, found_by)"
            " VALUES ('stale-source', %s, 'x', 'boss')",
            (f,),
        )
        for table in forced:
            conn.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        conn.commit()
    ids.update(leaked=leaked, gone=gone, event=event, session=session, message=message, judged=judged)
    return ids


# Every table or view a member may read, and how its rows of project acme are found. A table
# a migration adds fails test_a_member_reads_no_row_of_a_restricted_project until it is put
# in one of the two lists.
OF_ACME = {
    "memory_facts": "project = 'acme'",
    "memory_fact_vectors": "fact_id = %(fact)s",
    "memory_pins": "fact_id = %(fact)s",
    "memory_links": "to_id = %(fact)s",
    "memory_restores": "fact_id = %(gone)s",
    "memory_tidy_log": "fact_id = %(gone)s",
    "org_todos": "project = 'acme'",
    "recall_events": "project = 'acme'",
    "recall_hits": "event_id = %(event)s",
    "eval_runs": "project = 'acme'",
    "archive_sessions": "project = 'acme'",
    "archive_messages": "session_id = %(session)s",
    "quoted_sessions": "session_id = %(session)s",
    "quoted_recalls": "judged = %(judged)s",
    "quoted_hits": "judged = %(judged)s",
    "org_project_access": "project = 'acme'",
    "memory_erasures": "fact_id = %(leaked)s",
    "memory_proposals": "project = 'acme'",
    "memory_review_items": "fact_id = %(fact)s",
}
# Holding no project's rows, and why.
NOT_OF_A_PROJECT = {
    "org_agents": "who the agents are",
    "org_write_approvals": "owners' approvals of exact texts, by their hash: no text, no project (0037)",
    "notebook_entries": "an agent's own notebook, under its own rule (0013)",
    "notebook_versions": "the same",
    "context_delivered": "each agent reads only its own",
    "memory_review_runs": "each agent's own refresh times of the review list: no text, no project",
    "tool_calls": "which tool, when, how long: no text, no project",
    "archive_memory_versions": "bot memory files, by path: no project",
    "archive_sources": "the transcript files the archive read, by path and offset: no text",
    "vault_files": "the vault is not per project (private notes: 0008)",
    "vault_chunks": "the same",
    "vault_links": "the same",
    "vault_tags": "the same",
    "vault_terms": "the same",
    "vault_postings": "the same",
    "vault_meta": "the same",
    "vault_private_prefixes": "the same",
}


def _present(conn, tables) -> set[str]:
    """The tables of `tables` this database has (no vectors table on a server without pgvector)."""
    return {t for t in tables if conn.execute("SELECT to_regclass(%s) AS r", (f"public.{t}",)).fetchone()["r"]}


def _counts(conn, ids: dict[str, int]) -> dict[str, int]:
    return {
        t: conn.execute(f"SELECT count(*) AS n FROM {t} WHERE {w}", ids).fetchone()["n"]
        for t, w in OF_ACME.items()
        if t in _present(conn, [t])
    }


def _n(conn, statement: str, args=None) -> int:
    return conn.execute(statement, args).fetchone()["n"]


@pytest.mark.attack("sql")
def test_a_member_reads_no_row_of_a_restricted_project(org):
    ids = _seed(org)
    with org.admin() as conn:
        readable = {
            r["relname"]
            for r in conn.execute(
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname = 'public' AND c.relkind IN ('r', 'v', 'm', 'p', 'f')"
                " AND has_table_privilege(%s, c.oid, 'SELECT')",
                (f"{org.name}_member",),
            )
        }
        # A table that names a project, a fact or a session must be judged in OF_ACME.
        naming = {
            r["relname"]
            for r in conn.execute(
                "SELECT DISTINCT c.relname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
                " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'"
                " AND a.attname IN ('project', 'fact_id', 'session_id') AND NOT a.attisdropped AND c.relkind = 'r'"
            )
        }
        admin_counts = _counts(conn, ids)
    with org.admin() as conn:
        judged = _present(conn, [*OF_ACME, *NOT_OF_A_PROJECT])
    assert readable == judged, "judge every table a member reads"
    assert naming & set(NOT_OF_A_PROJECT) == set()
    assert {t for t, n in admin_counts.items() if n == 0} == {"eval_runs"}  # no run to copy; the policy is there
    with org.login(f"{org.name}_other", "other-pw") as other:
        assert _counts(other, ids) == dict.fromkeys(admin_counts, 0)
        # Nor by the text, nor through the functions a member may call.
        assert _n(other, "SELECT count(*) AS n FROM memory_facts WHERE claim LIKE '%%Fridays%%'") == 0
        assert other.execute("SELECT org_pins_listed('acme') AS p").fetchone()["p"] == "none"
        assert other.execute("SELECT org_project_readable('acme') AS r").fetchone()["r"] is False
    with org.login(f"{org.name}_bot", "bot-pw") as bot:
        assert _counts(bot, ids) == admin_counts  # bot is the agent it is restricted to: every row
    with org.as_agent("lead") as lead:  # bot's team lead
        assert _n(lead, "SELECT count(*) AS n FROM memory_facts WHERE project = 'acme'") == 3  # two current, one erased
        assert _n(lead, "SELECT count(*) AS n FROM archive_messages WHERE session_id = %(session)s", ids) == 1
    with org.as_agent("boss") as boss:  # an owner
        assert _n(boss, "SELECT count(*) AS n FROM org_todos WHERE project = 'acme'") == 1


@pytest.mark.vectors  # among its writes a vector: skipped on a team server without pgvector
@pytest.mark.attack("sql")
def test_writes_into_a_restricted_project_by_another_agent_are_refused(org):
    ids = _seed(org)
    with org.login(f"{org.name}_other", "other-pw") as other:
        for statement, args, error, words in (
            (
                "INSERT INTO memory_facts (subject, claim, source, author, project)"
                " VALUES ('s', 'c', 'a.md', 'other', 'acme')",
                None,
                pgerr.InsufficientPrivilege,
                "project acme is restricted",
            ),
            (
                "INSERT INTO org_todos (text, project, author) VALUES ('x', 'acme', 'other')",
                None,
                pgerr.InsufficientPrivilege,
                "restricted",
            ),
            (
                "INSERT INTO recall_events (project, query, arms, hits, chars, ms)"
                " VALUES ('acme', 'q', '{fact}', 0, 0, 1)",
                None,
                pgerr.InsufficientPrivilege,
                "restricted",
            ),
            ("SELECT org_forget(%(fact)s, 'x')", ids, pgerr.NoDataFound, "no fact with id"),
            ("SELECT org_pin(%(fact)s, NULL)", ids, pgerr.NoDataFound, "no fact with id"),
            ("SELECT org_unpin(%(fact)s)", ids, pgerr.NoDataFound, "no fact with id"),
            ("SELECT org_restore(%(fact)s, 'x')", ids, pgerr.NoDataFound, "no fact with id"),
            ("SELECT org_todo_done(%(todo)s)", ids, pgerr.NoDataFound, "no todo with id"),
            (
                "INSERT INTO memory_fact_vectors (fact_id, model, computed_by, embedding)"
                " VALUES (%(fact)s, 'm', 'other', array_fill(0.2::real, ARRAY[384])::vector)",
                ids,
                pgerr.NoDataFound,
                "no fact with id",
            ),
        ):
            with pytest.raises(error, match=words):
                other.execute(statement, args)
            other.rollback()
    # The library says it in one line.
    with pytest.raises(Exception, match="project acme is restricted: agent other may not read or write it"):
        facts.remember(org.writer("other"), "client", "Acme is easy", source="x.md", project="acme")
    with org.admin() as conn:
        assert conn.execute("SELECT count(*) AS n FROM memory_facts WHERE project = 'acme'").fetchone()["n"] == 3
        assert conn.execute("SELECT valid_to FROM memory_facts WHERE id = %(fact)s", ids).fetchone()["valid_to"] is None


@pytest.mark.attack("sql")
def test_only_an_owner_restricts_a_project(org, cli):
    _seed(org)
    for role, pw in (("bot", "bot-pw"), ("other", "other-pw")):
        with org.login(f"{org.name}_{role}", pw) as conn:
            for statement in (
                "SELECT org_restrict_project('acme', NULL)",
                "SELECT org_restrict_project('acme', ARRAY['other'])",
                "SELECT org_restrict_project('beta', ARRAY['other'])",
            ):
                with pytest.raises(pgerr.InsufficientPrivilege, match="only an owner may"):
                    conn.execute(statement)
                conn.rollback()
            for statement in (
                "INSERT INTO org_project_access (project, agent) VALUES ('acme', 'other')",
                "DELETE FROM org_project_access",
                "UPDATE org_project_access SET agent = 'other'",
            ):
                with pytest.raises(pgerr.InsufficientPrivilege):
                    conn.execute(statement)
                conn.rollback()
            conn.execute(f'SET ROLE "{org.name}_member"')  # the group itself is nobody
            with pytest.raises(pgerr.InsufficientPrivilege, match="nobody may not restrict"):
                conn.execute("SELECT org_restrict_project('acme', NULL)")
    code, _, err = cli("projects", "restrict", "acme", "--remove", agent="bot")
    assert (code, err) == (1, "cli-org: agent bot may not restrict a project: only an owner may\n")
    code, out, _ = cli("projects", "--json", agent="boss")
    assert json.loads(out) == [{"project": "acme", "facts": 2, "todos": 1, "sessions": 1, "restricted_to": ["bot"]}]


@pytest.mark.attack("recall")
def test_recall_facts_and_context_of_another_agent_leave_the_project_out(org, cli):
    ids = _seed(org)
    for args in (
        ("recall", "when does acme deploy on fridays"),
        ("recall", "acme deploy", "--json"),
        ("facts", "--all"),
        ("facts", "--project", "acme"),
        ("pins",),
        ("todo", "list", "--all"),
        ("projects", "--json"),
        ("context", "--for", "acme deploy fridays"),
        ("context", "--for", "acme deploy fridays", "--project", "beta"),
    ):
        code, out, err = cli(*args, agent="other")
        assert code == 0, (args, err)
        assert SECRET_WORD not in out and "acme" not in out.lower().replace("acme deploy", ""), args
    code, _, err = cli("facts", "show", str(ids["fact"]), agent="other")
    assert (code, err) == (1, f"cli-org: no fact with id {ids['fact']}\n")
    code, _, err = cli("recall", "acme", "--project", "acme", agent="other")
    assert (code, err) == (1, "cli-org: project acme is restricted: agent other may not read or write it\n")
    # Those it is restricted to see it, and are told so.
    for agent in ("bot", "lead", "boss"):
        code, out, _ = cli("facts", "show", str(ids["fact"]), agent=agent)
        assert code == 0 and SECRET in out
        assert "project acme is restricted to bot (and their team leads, owners)" in out
    code, out, _ = cli("context", "--project", "acme", agent="bot")
    assert SECRET in out  # pinned in its project


@pytest.mark.attack("activity")
def test_the_activity_feed_of_another_agent_leaves_the_project_out(org, cli):
    _seed(org)
    code, out, _ = cli("activity", "--since", "all", "--json", agent="other")
    assert code == 0 and "acme" not in out.lower() and SECRET_WORD not in out
    code, out, _ = cli("activity", "--since", "all", agent="lead")
    assert SECRET in out


@pytest.mark.attack("web")
def test_the_web_page_served_as_another_agent_leaves_the_project_out(org, web):
    ids = _seed(org)
    other = web("other")
    for path in ("/facts", "/facts?all=1", "/pins", "/todos", "/activity", "/sessions", "/api/facts", "/api/todos"):
        r = other.get(path)
        assert r.status_code == 200, path
        assert SECRET_WORD not in r.text and "acme" not in r.text.lower(), path
    assert other.get(f"/facts/{ids['fact']}").status_code == 404
    assert other.get(f"/api/facts/{ids['fact']}").status_code == 404
    assert other.get(f"/sessions/{ids['session']}").status_code == 404
    r = other.get("/api/sessions/search", params={"q": "Fridays"})
    assert SECRET_WORD not in r.text
    page = web("bot").get(f"/facts/{ids['fact']}")
    assert page.status_code == 200 and SECRET in page.text
    assert "project acme is restricted to bot (and their team leads, owners)" in page.text


@pytest.mark.attack("mcp")
def test_the_mcp_tools_of_another_agent_leave_the_project_out(org):
    from tests.helpers import serve, text

    ids = _seed(org)

    async def script(s):
        out = [
            await s.call_tool("org_recall", {"question": "when does acme deploy on fridays"}),
            await s.call_tool("org_facts", {"subject": "client"}),
            await s.call_tool("org_sessions_search", {"query": "Fridays"}),
            await s.call_tool("org_context", {"for": "acme deploy fridays"}),
        ]
        forget = await s.call_tool("org_forget", {"id": ids["fact"], "why": "x"})
        return [text(r) for r in out], text(forget)

    answers, forget = serve(org, script, agent="other")
    for answer in answers:
        assert SECRET_WORD not in answer
    assert forget == f"no fact with id {ids['fact']}"


@pytest.mark.attack(None)  # passed on main too (export needs the admin): a guard, not counted
def test_a_members_export_is_refused_before_it_reads_a_row(org):
    from cli_org.errors import AccessDenied
    from cli_org.store.transfer import export_lines

    _seed(org)
    with (
        org.login(f"{org.name}_other", "other-pw") as other,
        pytest.raises(AccessDenied, match="export needs the database admin, not other"),
    ):
        export_lines(other)


def test_lifting_and_changing_a_restriction(org, cli):
    ids = _seed(org)
    code, out, _ = cli("projects", "restrict", "acme", "--add", "other")
    assert (code, out) == (0, "project acme: restricted to bot, other (and their team leads, owners)\n")
    assert cli("facts", "show", str(ids["fact"]), agent="other")[0] == 0
    assert cli("projects", "restrict", "acme", "--to", "bot", agent="boss")[0] == 0
    assert cli("facts", "show", str(ids["fact"]), agent="other")[0] == 1
    code, out, _ = cli("projects", "restrict", "acme", "--remove", "--json")
    assert json.loads(out) == {"project": "acme", "restricted_to": None, "lifted": 1}
    code, out, _ = cli("facts", "show", str(ids["fact"]), agent="other")
    assert code == 0 and "restricted" not in out
    code, out, _ = cli("projects")
    assert out.splitlines()[1].split() == ["acme", "2", "1", "1", "-"]
    for args, words in (
        (("projects", "restrict", "acme"), "give exactly one of --to, --add or --remove"),
        (("projects", "restrict", "acme", "--to", ","), "name at least one agent"),
        (("projects", "restrict", "acme", "--to", "ghost"), "no agent named ghost"),
        (("projects", "restrict", "a b", "--to", "bot"), "must be letters, digits"),
    ):
        code, _, err = cli(*args)
        assert code in (1, 2) and words in err and err.count("\n") == 1, (args, err)


def test_a_restricted_projects_pins_count_against_its_own_cap(org):
    with org.admin() as conn:
        projects_lib.restrict(conn, "acme", ["bot"])
    bot = org.writer("bot")
    for n in range(5):
        pins.pin(bot, facts.remember(bot, f"s{n}", f"Acme rule number {n} holds", source="a.md", project="acme").id)
    extra = facts.remember(bot, "s9", "Acme rule nine holds too", source="a.md", project="acme").id
    with pytest.raises(Exception, match="project acme already holds 5 pins, the cap"):
        pins.pin(bot, extra)
    with pytest.raises(Exception, match="belongs to project acme"):
        pins.pin(bot, extra, "beta")
    # Another agent's org-wide scope is untouched by them, and its listing shows none.
    assert pins.list_pins(org.writer("other")) == []


def _read_rule(org) -> str:
    with org.admin() as conn:
        return conn.execute(
            "SELECT pg_get_expr(polqual, polrelid) AS q FROM pg_policy"
            " WHERE polrelid = 'memory_facts'::regclass AND polname = 'facts_read'"
        ).fetchone()["q"]


def test_the_read_policies_restrict_only_while_a_project_is_restricted(org, cli):
    """A policy with a condition costs a member's lexical search its index (docs/security.md):
    with no project restricted the policies are main's `true`; the first restriction puts in
    the restricting form, lifting the last takes it out, in the same transaction."""
    assert _read_rule(org) == "true"
    assert cli("projects", "restrict", "acme", "--to", "bot")[0] == 0
    assert "org_projects_hidden" in _read_rule(org)
    assert cli("projects", "restrict", "beta", "--to", "other")[0] == 0
    assert cli("projects", "restrict", "acme", "--remove")[0] == 0
    assert "org_projects_hidden" in _read_rule(org)  # beta still is
    assert cli("projects", "restrict", "beta", "--remove")[0] == 0
    assert _read_rule(org) == "true"


@pytest.mark.attack("restore")
def test_a_restored_backup_keeps_its_restrictions_enforced(org, cli, tmp_path):
    if org.server.data_dir is None:
        pytest.skip("db backup runs pg_dump as the admin, which forced row-level security binds on a team server")
    """The restore loads rows with the tables' triggers off, into a database whose policies
    were open (nothing restricted when it was migrated): it must put the restricting form in."""
    from cli_org.db.backup import backup, restore

    ids = _seed(org)
    dump = tmp_path / "org.dump"
    backup(org.settings, dump)
    kept = restore(org.settings, dump, force=True).replaced
    try:
        assert "org_projects_hidden" in _read_rule(org)
        with org.login(f"{org.name}_other", "other-pw") as other:
            assert _n(other, "SELECT count(*) AS n FROM memory_facts WHERE project = 'acme'") == 0
        code, _, err = cli("facts", "show", str(ids["fact"]), agent="other")
        assert code == 1 and "no fact with id" in err
    finally:
        if kept:
            with psycopg.connect(org.server.admin_url, autocommit=True) as conn:
                conn.execute(pgsql.SQL("DROP DATABASE {} WITH (FORCE)").format(pgsql.Identifier(kept)))
