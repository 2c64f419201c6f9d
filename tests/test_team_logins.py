"""The faces a team server is used through, with the logins it has (docs/operations.md, Team server):
export and import by an administrator that is no superuser, and the MCP server run by an
agent that logs in as its own role with its own password (no `--as`, no SET ROLE).

Run in the normal suite (the embedded server; a non-superuser administrator is made for the
transfer tests) and by .ci/run against the team server (CLI_ORG_TEST_DATABASE_URL)."""

from __future__ import annotations

import json

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import sql as pgsql
from psycopg.conninfo import make_conninfo

from cli_org.config import Settings
from cli_org.store import facts, notebook
from tests.helpers import serve, text

pytestmark = pytest.mark.slow


def _run(env: dict[str, str], *args: str, agent: str | None = None):
    from cli_org.faces.cli import cli as group

    extra = {"ORG_AGENT": agent, "ORG_VIA": None}
    result = CliRunner().invoke(group, list(args), env={**env, **extra}, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _login_url(server, dbname: str, role: str, password: str) -> str:
    return make_conninfo(host=server.tcp_host, port=server.tcp_port, dbname=dbname, user=role, password=password)


# --- export and import by an administrator that is no superuser ----------------------------


@pytest.fixture
def plain_admin(blank_db):
    """(blank_db, the admin's env): a database initialised by an administrator with LOGIN,
    CREATEROLE and CREATEDB only. On a team server that is the suite's own admin; on the
    embedded server one is made and given the database, as a managed service hands it over."""
    if blank_db.server.data_dir is None:
        env = dict(blank_db.env)
    else:
        admin = f"{blank_db.name}_admin"
        with psycopg.connect(blank_db.server.admin_url, autocommit=True) as conn:
            conn.execute(
                pgsql.SQL("CREATE ROLE {} LOGIN CREATEROLE CREATEDB PASSWORD 'admin-pw'").format(
                    pgsql.Identifier(admin)
                )
            )
            conn.execute(
                pgsql.SQL("ALTER DATABASE {} OWNER TO {}").format(
                    pgsql.Identifier(blank_db.name), pgsql.Identifier(admin)
                )
            )
        env = {"CLI_ORG_DATABASE_URL": _login_url(blank_db.server, blank_db.name, admin, "admin-pw")}
    code, _, err = _run(env, "init", "--owner", "boss")
    assert code == 0, err
    with psycopg.connect(Settings.from_env(env).database_url) as conn:
        assert not conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()[0]
    return blank_db, env


def _add(env, name: str, *extra: str) -> None:
    code, _, err = _run({**env, "ORG_AGENT_PASSWORD": f"{name}-pw"}, "agents", "add", name, *extra)
    assert code == 0, err


def test_a_non_superuser_admin_exports_and_imports_and_acts_as_the_agents_it_imported(plain_admin, tmp_path):
    """Before: export and import refused this admin ("needs the database admin, not a member
    role": it is a member of every agent's role), and an agent that import created could
    not be acted as with --as (the admin was not granted its role)."""
    blank_db, env = plain_admin
    _add(env, "bot", "--login")
    code, _, err = _run(env, "remember", "deploys", "We deploy on Tuesdays", "--source", "docs/ops.md", agent="bot")
    assert code == 0, err
    code, _, err = _run(env, "notebook", "add", "--target", "memory", "staging is flaky on fridays", agent="bot")
    assert code == 0, err
    dump = tmp_path / "org.jsonl"
    code, _, err = _run(env, "export", "--out", str(dump))
    assert code == 0 and "exported" in err, err

    # Into a second database the same admin makes (CREATEDB) and initialises.
    other = f"{blank_db.name}_b"
    admin_url = Settings.from_env(env).database_url
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(pgsql.SQL("CREATE DATABASE {}").format(pgsql.Identifier(other)))
    try:
        env_b = {"CLI_ORG_DATABASE_URL": make_conninfo(admin_url, dbname=other)}
        code, _, err = _run(env_b, "init", "--owner", "boss")
        assert code == 0, err
        code, out, err = _run(env_b, "import", str(dump), "--json")
        assert code == 0, err
        kinds = {k["kind"]: k for k in json.loads(out)["kinds"]}
        assert kinds["fact"]["added"] == 1 and kinds["agent"]["added"] == 1  # bot; boss is present
        # The imported agent's role (no login) can be acted as by this admin.
        code, out, err = _run(env_b, "facts", "--json", agent="bot")
        assert code == 0 and [f["claim"] for f in json.loads(out)] == ["We deploy on Tuesdays"], err
        code, out, err = _run(env_b, "notebook", "show", "--target", "memory", "--json", agent="bot")
        assert code == 0 and "staging is flaky" in out, err
        code, _, err = _run(env_b, "remember", "x", "A claim after the import", "--source", "a.md", agent="bot")
        assert code == 0, err
        # Importing again changes nothing.
        code, out, _ = _run(env_b, "import", str(dump), "--json")
        assert all(k["added"] == 0 and k["conflicting"] == 0 for k in json.loads(out)["kinds"])
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            from tests.databases import drop_database

            drop_database(conn, other)
            for (role,) in conn.execute("SELECT rolname FROM pg_roles WHERE rolname LIKE %s", (other + "\\_%",)):
                conn.execute(pgsql.SQL("DROP ROLE {}").format(pgsql.Identifier(role)))


def test_agents_logged_in_as_themselves_may_not_export_or_import(org, tmp_path):
    """A member's view is filtered by row-level security: even an owner, logged in with its
    own password, is refused in one line, and nothing is imported."""
    from cli_org.store.agents import add_agent

    with org.admin() as conn:
        add_agent(conn, "chief", owner=True, password="chief-pw")
    with org.as_agent("bot") as conn:
        facts.remember(conn, "deploys", "We deploy on Tuesdays", source="docs/ops.md")
    dump = tmp_path / "org.jsonl"
    code, _, err = _run(org.env, "export", "--out", str(dump))
    assert code == 0, err
    lines = dump.read_text().splitlines()
    fact = next(record for record in map(json.loads, lines) if record["kind"] == "fact")
    crafted = tmp_path / "crafted.jsonl"
    crafted.write_text("\n".join([lines[0], json.dumps({**fact, "id": 99, "claim": "Planted by a member"})]) + "\n")
    for agent in ("bot", "chief"):
        env = {"CLI_ORG_DATABASE_URL": _login_url(org.server, org.name, f"{org.name}_{agent}", f"{agent}-pw")}
        for args in (["export"], ["export", "--out", str(tmp_path / f"{agent}.jsonl")], ["import", str(crafted)]):
            code, out, err = _run(env, *args)
            assert code == 1 and out == "" and err.count("\n") == 1, (agent, args, err)
            assert "needs the database admin" in err
        assert not (tmp_path / f"{agent}.jsonl").exists()
    with org.admin() as conn:
        assert conn.execute("SELECT count(*) AS n FROM memory_facts").fetchone()["n"] == 1


# --- the MCP server, run by an agent logged in with its own password -------------------------


def _mcp_login(org, agent: str) -> dict[str, str]:
    return {"CLI_ORG_DATABASE_URL": _login_url(org.server, org.name, f"{org.name}_{agent}", f"{agent}-pw")}


def test_mcp_as_an_agent_logged_in_with_its_own_password(org):
    with org.as_agent("boss") as conn:
        owners = facts.remember(conn, "policy", "Releases need two approvals", source="docs/release.md").id
    with org.as_agent("other") as conn:
        notebook.add(conn, "memory", "other keeps the zebra rollout plan private")

    async def script(s):
        out = {}
        out["remember"] = await s.call_tool(
            "org_remember", {"subject": "deploys", "claim": "Deploys need a green zebra check", "source": "ci.md"}
        )
        out["note"] = await s.call_tool(
            "org_notebook_edit", {"action": "add", "target": "memory", "text": "bot checks the zebra dashboard"}
        )
        out["show"] = await s.call_tool("org_notebook", {"target": "memory"})
        out["facts"] = await s.call_tool("org_facts", {})
        out["recall"] = await s.call_tool("org_recall", {"question": "zebra rollout plan"})
        out["context"] = await s.call_tool("org_context", {"for": "zebra rollout"})
        out["forget_owners"] = await s.call_tool("org_forget", {"id": owners, "why": "as bot"})
        out["spoof"] = await s.call_tool("org_forget", {"id": owners, "why": "as boss", "agent": "boss"})
        out["resource"] = await s.read_resource("cli-org://notebook")
        return out

    out = serve(org, script, agent=None, **_mcp_login(org, "bot"))
    for name in ("remember", "note", "show", "facts", "recall", "context"):
        assert not out[name].is_error, (name, text(out[name]))
    assert "bot checks the zebra dashboard" in text(out["show"])
    assert "Releases need two approvals" in text(out["facts"]) and "green zebra" in text(out["facts"])
    # Row-level security on the agent's own login: no other agent's notebook, anywhere.
    seen = "".join(text(out[n]) for n in ("show", "recall", "context", "facts"))
    seen += "".join(c.text for c in out["resource"].contents)
    assert "zebra rollout plan private" not in seen
    assert "bot checks the zebra dashboard" in text(out["context"])
    # Not the owner's fact; and who the server acts as is fixed.
    assert out["forget_owners"].is_error
    assert out["spoof"].is_error and "'agent'" in text(out["spoof"])
    with org.admin() as conn:
        rows = conn.execute("SELECT author, claim, valid_to FROM memory_facts ORDER BY id").fetchall()
        calls = conn.execute("SELECT DISTINCT agent FROM tool_calls").fetchall()
        entries = conn.execute("SELECT agent, body FROM notebook_entries ORDER BY id").fetchall()
    assert [(r["author"], r["valid_to"]) for r in rows] == [("boss", None), ("bot", None)]
    assert calls == [{"agent": "bot"}]
    assert [(e["agent"], e["body"]) for e in entries] == [
        ("other", "other keeps the zebra rollout plan private"),
        ("bot", "bot checks the zebra dashboard"),
    ]


@pytest.mark.parametrize(
    ("login", "args", "says"),
    [
        (("bot", "wrong-pw"), [], "cannot connect to CLI_ORG_DATABASE_URL"),
        (("bot", "bot-pw"), ["--as", "other"], "this login may not act as agent 'other'"),
        (("bot", "bot-pw"), ["--as", "boss"], "this login may not act as agent 'boss'"),
    ],
)
def test_mcp_with_a_wrong_password_or_another_agents_name_stops_with_one_line(org, login, args, says):
    agent, password = login
    env = {"CLI_ORG_DATABASE_URL": _login_url(org.server, org.name, f"{org.name}_{agent}", password)}
    code, out, err = _run(env, "mcp", *args)
    assert code == 1 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"cli-org: {says}") and password not in err
