"""Reads from a read replica (CLI_ORG_READ_URL), against a real streaming replica.

The module builds its own primary (an embedded server in a temporary folder, so a test may
stop it) and a hot standby made from it with the same binaries (`pg_basebackup -R`),
started on a free port as the unprivileged user, streaming from the primary. Recall,
search and context read from the replica; every write goes to the primary; a write with
only the replica reachable fails in one line and leaves nothing behind; an agent logged in
as itself on the replica reads no more there than on the primary."""

from __future__ import annotations

import json
import uuid

import anyio
import psycopg
import pytest
from click.testing import CliRunner
from psycopg import sql as pgsql
from psycopg.rows import dict_row

from cli_org.config import Settings
from cli_org.db.errors import READ_ONLY
from tests.fakes import HashEmbedder
from tests.replica_pair import Pair, build_pair, stop_pair

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("replica")]


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    made = build_pair(tmp_path_factory.mktemp("replica"))
    yield made
    stop_pair(made)


def run(env: dict[str, str | None], *args: str) -> tuple[int, str, str]:
    from cli_org.faces.cli import cli as group

    result = CliRunner().invoke(group, list(args), env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def count(pair: Pair, query: str, params=(), *, replica: bool = False) -> int:
    with pair.admin(replica=replica) as conn:
        return conn.execute(f"SELECT count(*) AS n FROM ({query}) q", params).fetchone()["n"]


def test_a_fact_written_to_the_primary_is_recalled_from_the_replica(pair):
    env = pair.embedded_env("bot")
    # Reads really go to the replica: with its replay paused, the new fact is not there yet.
    with pair.paused():
        code, out, err = run(
            env, "remember", "replica check", "The blue deploy lane drains first", "--source", "ops.md"
        )
        assert code == 0, err
        code, out, err = run(env, "recall", "blue deploy lane")
        assert code == 0, err
        assert "The blue deploy lane drains first" not in out
    pair.caught_up()
    code, out, err = run(env, "recall", "blue deploy lane")
    assert code == 0, err
    assert "The blue deploy lane drains first" in out
    assert err == ""
    # The fact was written once, on the primary.
    assert count(pair, "SELECT 1 FROM memory_facts WHERE claim = %s", ("The blue deploy lane drains first",)) == 1


def test_the_recall_log_is_written_on_the_primary(pair):
    env = pair.embedded_env("bot")
    question = f"where is lane {uuid.uuid4().hex[:6]}"
    code, _, err = run(env, "recall", question)
    assert code == 0, err
    assert count(pair, "SELECT 1 FROM recall_events WHERE query = %s", (question,)) == 1


def test_context_for_a_task_read_from_the_replica_logs_its_recall_on_the_primary(pair):
    """The rule of org.py, for `context --for` too: before the Org, only recall's faces
    recorded a replica's read on the primary, and this recall went unlogged."""
    env = pair.embedded_env("bot")
    task = f"fix lane {uuid.uuid4().hex[:6]}"
    code, out, err = run(env, "context", "--for", task, "--format", "json")
    assert code == 0, err
    assert json.loads(out)["for_text"] == task
    assert count(pair, "SELECT 1 FROM recall_events WHERE query = %s", (task,)) == 1  # on the primary


def test_search_and_context_read_from_the_replica(pair):
    env = pair.embedded_env("bot")
    with pair.paused():
        code, _, err = run(env, "remember", "context lane", "The green lane holds the canary", "--source", "ops.md")
        assert code == 0, err
        code, out, err = run(env, "context", "--format", "json")
        assert code == 0, err
        assert "green lane" not in out  # the replica has not replayed it
        code, out, err = run(env, "search", "green lane", "--mode", "keyword")
        assert code == 0, err
    pair.caught_up()
    code, out, err = run(env, "context")
    assert code == 0, err
    assert "The green lane holds the canary" in out
    # --session remembers what it delivered: a write, so it goes to the primary and works.
    code, out, err = run(env, "context", "--session", "s1")
    assert code == 0, err
    assert "green lane" in out
    assert count(pair, "SELECT 1 FROM context_delivered") > 0


def test_vectors_written_with_the_fact_reach_the_replica_whose_recall_writes_nothing(pair):
    """The primary stores a fact's vector as the fact is written; the replica receives it, and
    a recall read there writes nothing (its log line is record_recall's, on the primary)."""
    from cli_org.db.connect import connect, on_replica
    from cli_org.recall.answer import recall, record_recall

    cfg = Settings.from_env({k: v for k, v in pair.embedded_env().items() if v is not None})
    embedder = HashEmbedder()
    with connect(cfg, "bot") as w:
        from cli_org.store.facts import remember

        remember(w, "vector lane", "The amber lane is for hotfixes", source="ops.md", embedder=embedder)
    pair.caught_up()
    vectors = (
        "SELECT 1 FROM memory_facts f JOIN memory_fact_vectors v ON v.fact_id = f.id "
        "WHERE f.claim = 'The amber lane is for hotfixes' AND v.computed_by = 'bot'"
    )
    assert count(pair, vectors, replica=True) == 1
    logged = "SELECT 1 FROM recall_events WHERE query = 'amber lane hotfixes'"
    with connect(cfg, "bot", read=True) as r:
        assert on_replica(r)
        result = recall(r, "amber lane hotfixes", settings=cfg, embedder=embedder)
        assert "amber lane" in result.text
        with pytest.raises(Exception, match="primary"):
            record_recall(r, result)
    assert count(pair, logged) == 0
    with connect(cfg, "bot") as w:
        record_recall(w, result)
    assert count(pair, logged) == 1


def test_a_write_sent_to_the_replica_is_refused_in_one_line(pair):
    env = pair.server_env("bot", "bot-pw")
    env["CLI_ORG_DATABASE_URL"] = env["CLI_ORG_READ_URL"]  # the replica named as the primary
    before = count(pair, "SELECT 1 FROM memory_facts")
    code, out, err = run(env, "remember", "misrouted", "The red lane is closed on Fridays", "--source", "ops.md")
    assert code == 1
    assert err == f"cli-org: {READ_ONLY}\n"
    assert count(pair, "SELECT 1 FROM memory_facts") == before
    notes = count(pair, "SELECT 1 FROM notebook_entries")
    code, out, err = run(env, "notebook", "add", "--target", "memory", "Check the red lane first")
    assert code == 1
    assert err == f"cli-org: {READ_ONLY}\n"
    code, out, err = run(env, "remember", "--json", "misrouted", "The red lane is closed", "--source", "ops.md")
    assert code == 1
    assert json.loads(err) == {"error": READ_ONLY}
    assert count(pair, "SELECT 1 FROM notebook_entries") == notes


def test_security_holds_on_the_replica(pair):
    """Each agent logs in as its own role on the replica too (roles replicate)."""
    code, _, err = run(
        pair.server_env("other", "other-pw"),
        "notebook",
        "add",
        "--target",
        "memory",
        "The vault key rotates on Mondays",
    )
    assert code == 0, err
    pair.caught_up()
    # bot reads from the replica as itself: no trace of other's notebook.
    env = pair.server_env("bot", "bot-pw")
    code, out, err = run(env, "recall", "vault key rotates Mondays")
    assert code == 0, err
    assert "vault key" not in out
    code, out, err = run(env, "context")
    assert code == 0, err
    assert "vault key" not in out
    with psycopg.connect(pair.tcp("bot", "bot-pw", replica=True), row_factory=dict_row) as conn:
        assert conn.execute("SELECT pg_is_in_recovery() AS r").fetchone()["r"]
        assert conn.execute("SELECT count(*) AS n FROM notebook_entries").fetchone()["n"] == 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(pgsql.SQL("SET ROLE {}").format(pgsql.Identifier(pair.roles["other"])))
    with psycopg.connect(pair.tcp("other", "other-pw", replica=True), row_factory=dict_row) as conn:
        assert conn.execute("SELECT count(*) AS n FROM notebook_entries").fetchone()["n"] >= 1
    # A wrong password is refused by the replica as by the primary.
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(pair.tcp("bot", "other-pw", replica=True)).close()
    # other, on the replica, sees its own note in recall.
    code, out, err = run(pair.server_env("other", "other-pw"), "recall", "vault key rotates Mondays")
    assert code == 0, err
    assert "vault key" in out


def test_with_only_the_replica_reachable_writes_fail_and_reads_go_on(pair):
    env = pair.server_env("bot", "bot-pw")
    # A fact of its own (the module's tests may run on other workers, each with its own pair).
    code, _, err = run(env, "remember", "outage", "The amber deploy lane closes at six", "--source", "ops.md")
    assert code == 0, err
    pair.caught_up()
    before = count(pair, "SELECT 1 FROM memory_facts")
    pair.stop_primary()
    try:
        code, out, err = run(env, "remember", "outage", "The violet lane opens at noon", "--source", "ops.md")
        assert code == 1
        assert out == ""
        assert err.startswith("cli-org: cannot connect to CLI_ORG_DATABASE_URL:")
        assert err.count("\n") == 1
        code, out, err = run(env, "remember", "--json", "outage", "The violet lane opens at noon", "--source", "ops.md")
        assert code == 1
        assert err.startswith('{"error": "cannot connect to CLI_ORG_DATABASE_URL')
        # Reads go on from the replica; the answer says its log line could not be written.
        code, out, err = run(env, "recall", "amber deploy lane")
        assert code == 0, err
        assert "The amber deploy lane closes at six" in out
        assert err.startswith("notice: answered from the read replica; not logged on the primary")
    finally:
        pair.start_primary()
    assert count(pair, "SELECT 1 FROM memory_facts") == before
    assert count(pair, "SELECT 1 FROM memory_facts WHERE claim = %s", ("The violet lane opens at noon",)) == 0
    # The replica reconnects by itself and writes work again.
    code, _, err = run(env, "remember", "outage", "The violet lane opens at noon", "--source", "ops.md")
    assert code == 0, err
    pair.caught_up()
    code, out, _ = run(env, "recall", "violet lane")
    assert "The violet lane opens at noon" in out


def test_a_read_url_that_cannot_be_reached_or_parsed_says_so(pair):
    env = pair.embedded_env("bot")
    env["CLI_ORG_READ_URL"] = "host=127.0.0.1 port=1 dbname=x user=y connect_timeout=2"
    code, out, err = run(env, "recall", "anything")
    assert code == 1
    assert err.startswith("cli-org: cannot connect to the read replica (CLI_ORG_READ_URL):")
    # writes do not touch the read URL
    code, _, err = run(env, "remember", "unreached", "The grey lane is unaffected", "--source", "ops.md")
    assert code == 0, err
    env["CLI_ORG_READ_URL"] = "postgresql://x:notaport/db"
    code, out, err = run(env, "recall", "anything")
    assert code == 1
    assert err.startswith("cli-org: CLI_ORG_READ_URL")


def test_the_mcp_server_reads_from_the_replica_and_writes_to_the_primary(pair):
    from cli_org.faces.mcp.server import Session, build_server
    from cli_org.org import Org

    cfg = Settings.from_env({k: v for k, v in pair.server_env("bot", "bot-pw").items() if v is not None})
    with Org.open(cfg, None, face="mcp", pool=1) as org:
        assert org.reads is not None  # the replica's pool, beside the primary's
        server = build_server(Session(org))

        async def call(name, args):
            return await server.call_tool(name, args)

        def text(result):
            blocks = result[0] if isinstance(result, tuple) else result.content
            return "\n".join(getattr(b, "text", "") for b in blocks)

        with pair.paused():
            anyio.run(
                call, "org_remember", {"subject": "mcp lane", "claim": "The teal lane is for MCP", "source": "m.md"}
            )
            missing = text(anyio.run(call, "org_recall", {"question": "teal lane"}))
        assert "The teal lane is for MCP" not in missing  # other facts with "lane" may match
        assert missing.startswith(("[fact #", "nothing found"))  # an answer, not a refusal
        pair.caught_up()
        found = text(anyio.run(call, "org_recall", {"question": "teal lane"}))
        assert "The teal lane is for MCP" in found
    tools = "SELECT 1 FROM tool_calls WHERE face = 'mcp' AND tool = %s"
    assert count(pair, tools, ("org_recall",)) == 2  # logged on the primary
    assert count(pair, tools, ("org_remember",)) == 1
    assert count(pair, "SELECT 1 FROM recall_events WHERE query = 'teal lane'") == 2


def test_the_mcp_server_process_opens_its_read_pool_on_the_replica(pair):
    """`cli-org mcp` as a harness starts it, with CLI_ORG_READ_URL in its environment."""
    import os
    import sys

    from mcp import ClientSession, StdioServerParameters, stdio_client

    env = {k: v for k, v in {**os.environ, **pair.embedded_env()}.items() if v is not None}
    env.pop("ORG_AGENT", None)
    params = StdioServerParameters(command=sys.executable, args=["-m", "cli_org", "mcp", "--as", "bot"], env=env)

    async def script():
        with open(os.devnull, "w") as quiet:
            async with (
                stdio_client(params, errlog=quiet) as (read, write),
                ClientSession(read, write) as s,
            ):
                await s.initialize()
                with pair.paused():
                    fact = {"subject": "stdio", "claim": "The plum lane opens at nine", "source": "a.md"}
                    await s.call_tool("org_remember", fact)
                    before = await s.call_tool("org_recall", {"question": "plum lane"})
                    note = await s.call_tool("org_notebook_edit", {"action": "add", "text": "Plum lane notes"})
                    shown = await s.call_tool("org_notebook", {})
                pair.caught_up()
                after = await s.call_tool("org_recall", {"question": "plum lane"})
                return [" ".join(c.text for c in r.content) for r in (before, note, shown, after)]

    before, note, shown, after = anyio.run(script)
    assert "plum" not in before.lower()  # read from the paused replica
    # an answer, not a refusal (after recall's notices, such as a fact the replica holds without a vector)
    assert before.split("\n")[-1].startswith(("[fact #", "nothing found")), before
    assert note.startswith("added")
    assert "Plum lane notes" in shown  # the notebook reads the primary: the entry just written
    assert "The plum lane opens at nine" in after
