"""Getting into the database by hand: db url, db psql, the url in db status, bad URLs."""

import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

pytestmark = pytest.mark.slow

WORKTREE = Path(__file__).resolve().parents[1]


def _child(org, *args, env=None):
    base = {k: v for k, v in os.environ.items() if k not in ("ORG_AGENT", "PGPASSWORD")}
    return subprocess.run(
        [sys.executable, "-m", "cli_org", *args],
        cwd=WORKTREE,
        env={**base, **org.env, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )


def _who(url, **kw):
    with psycopg.connect(url, **kw) as conn:
        return conn.execute("SELECT current_user, current_database()").fetchone()


def test_db_url_is_the_admins_and_status_json_carries_it(cli, org):
    code, out, err = cli("db", "url")
    assert code == 0 and err == "" and out.startswith("postgresql://")
    url = out.strip()
    # The embedded superuser needs no password; a team server's admin has one, masked here.
    password = conninfo_to_dict(org.server.admin_url).get("password")
    user, database = _who(url, **({"password": password} if password else {}))
    assert database == org.name
    with org.admin() as conn:
        role = conn.execute("SELECT * FROM pg_roles WHERE rolname = %s", (user,)).fetchone()
    # docs/operations.md, Team server: a superuser, or an admin with CREATEROLE and CREATEDB.
    assert role["rolsuper"] or (role["rolcreaterole"] and role["rolcreatedb"])
    code, out, _ = cli("db", "status", "--json")
    assert code == 0 and json.loads(out)["url"] == url
    assert json.loads(cli("db", "url", "--json")[1])["url"] == url


def test_db_url_as_an_agent_is_its_own_login_without_a_password(cli, org):
    code, out, err = cli("db", "url", "--as", "bot")
    url = out.strip()
    assert code == 0 and "bot-pw" not in url and "PGPASSWORD" in err
    assert _who(url, password="bot-pw") == (f"{org.name}_bot", org.name)
    with pytest.raises(psycopg.OperationalError):
        _who(url, password="wrong")
    data = json.loads(cli("db", "url", "--as", "bot", "--json")[1])
    assert data["agent"] == "bot" and data["user"] == f"{org.name}_bot" and "PGPASSWORD" in data["password_from"]
    code, out, err = cli("db", "url", "--as", "lead")  # added without --login
    assert code == 1 and out == "" and err.count("\n") == 1 and "no login of its own" in err
    code, _, err = cli("db", "url", "--as", "ghost")
    assert code == 1 and "unknown agent 'ghost'" in err


def test_db_psql_as_admin_and_as_an_agent(org):
    done = _child(org, "db", "psql", "--", "-At", "-c", "SELECT current_database()")
    assert done.returncode == 0 and done.stdout.strip() == org.name, done.stderr
    done = _child(org, "db", "psql", "--as", "bot", "--", "-At", "-c", "SELECT org_me()", env={"PGPASSWORD": "bot-pw"})
    assert done.returncode == 0 and done.stdout.strip() == "bot", done.stderr
    done = _child(org, "db", "psql", "--", "-At", "-c", "SELECT nonsense")
    assert done.returncode != 0 and "nonsense" in done.stderr


def test_db_url_with_a_database_url_masks_its_password(cli, monkeypatch):
    monkeypatch.setenv("CLI_ORG_DATABASE_URL", "postgresql://alice:s3cr%40t@db.example:6543/org?sslmode=require")
    code, out, _ = cli("db", "url")
    assert code == 0 and out.strip() == "postgresql://alice:********@db.example:6543/org?sslmode=require"
    code, out, _ = cli("db", "url", "--show-password")
    assert out.strip() == "postgresql://alice:s3cr%40t@db.example:6543/org?sslmode=require"
    shown = json.loads(cli("db", "url", "--show-password", "--json")[1])["url"]
    assert psycopg.conninfo.conninfo_to_dict(shown)["password"] == "s3cr@t"


@pytest.mark.parametrize(
    "url",
    [
        "not a url",
        "postgresql://u:hunter2@[::1/db",
        "postgresql://%zz:hunter2@h/db",
        "postgresql://u:hunter2@h:notaport/db",
    ],
)
@pytest.mark.parametrize("command", [["facts"], ["db", "status"], ["db", "status", "--json"], ["init"], ["db", "url"]])
def test_a_malformed_database_url_is_one_line(cli, monkeypatch, url, command):
    monkeypatch.setenv("CLI_ORG_DATABASE_URL", url)
    code, out, err = cli(*command, agent="bot")
    assert code == 1 and out == "" and err.count("\n") == 1, (code, out, err)
    assert "CLI_ORG_DATABASE_URL" in err and "hunter2" not in err and "Traceback" not in err


@pytest.mark.parametrize("command", [["facts"], ["db", "status"], ["init"], ["recall", "deploy"]])
def test_an_unreachable_server_is_one_line(cli, monkeypatch, command):
    monkeypatch.setenv("CLI_ORG_DATABASE_URL", "postgresql://nobody@127.0.0.1:1/org?connect_timeout=3")
    code, out, err = cli(*command, agent="bot")
    assert code == 1 and out == "" and err.count("\n") == 1, (code, out, err)
    assert err.startswith("cli-org: cannot connect to CLI_ORG_DATABASE_URL") and "refused" in err


# --- the read URL (CLI_ORG_READ_URL) in db url and db status -------------------------------

READ_URL = "postgresql://reader:r3ad%40pw@replica.example:5433/org?sslmode=require"
READ_MASKED = "postgresql://reader:********@replica.example:5433/org?sslmode=require"


def test_db_url_and_status_show_the_read_url_masked(cli, org, monkeypatch):
    admin_url = cli("db", "url")[1].strip()
    monkeypatch.setenv("CLI_ORG_READ_URL", READ_URL)
    code, out, err = cli("db", "url")
    # stdout stays the one admin URL (`psql "$(cli-org db url)"`); the replica's goes to stderr
    assert code == 0 and out.strip() == admin_url
    assert err == f"read url: {READ_MASKED} (CLI_ORG_READ_URL)\n"
    assert json.loads(cli("db", "url", "--json")[1])["read_url"] == READ_MASKED
    code, out, err = cli("db", "url", "--show-password")
    assert code == 0 and f"read url: {READ_URL} " in err
    shown = json.loads(cli("db", "url", "--show-password", "--json")[1])["read_url"]
    assert conninfo_to_dict(shown)["password"] == "r3ad@pw"

    code, out, err = cli("db", "status")
    assert code == 0 and f"read url: {READ_MASKED} (CLI_ORG_READ_URL" in out and "r3ad" not in out + err
    data = json.loads(cli("db", "status", "--json")[1])
    assert data["read_url"] == READ_MASKED and data["url"] == admin_url


def test_db_url_as_an_agent_gives_its_own_login_on_the_replica_without_a_password(cli, org, monkeypatch):
    monkeypatch.setenv("CLI_ORG_READ_URL", READ_URL)
    code, out, err = cli("db", "url", "--as", "bot")
    role = f"{org.name}_bot"
    assert code == 0 and "r3ad" not in out + err and "********" not in out + err
    assert f"read url: postgresql://{role}@replica.example:5433/org?sslmode=require (CLI_ORG_READ_URL)" in err
    data = json.loads(cli("db", "url", "--as", "bot", "--show-password", "--json")[1])
    assert data["read_url"] == f"postgresql://{role}@replica.example:5433/org?sslmode=require"  # never a password


def test_a_read_url_in_keyword_form_is_masked_too(cli, org, monkeypatch):
    monkeypatch.setenv("CLI_ORG_READ_URL", "host=replica.example port=5433 dbname=org user=reader password='a b\\'c'")
    for command in (["db", "url"], ["db", "status"], ["db", "status", "--json"], ["db", "url", "--json"]):
        code, out, err = cli(*command)
        assert code == 0 and "a b" not in out + err
        assert "postgresql://reader:********@replica.example:5433/org" in out + err


def test_without_a_read_url_neither_shows_one(cli, org, monkeypatch):
    monkeypatch.delenv("CLI_ORG_READ_URL", raising=False)
    code, out, err = cli("db", "status")
    assert code == 0 and "read url" not in out + err
    assert json.loads(cli("db", "status", "--json")[1])["read_url"] is None
    assert json.loads(cli("db", "url", "--json")[1])["read_url"] is None
    assert json.loads(cli("db", "url", "--as", "bot", "--json")[1])["read_url"] is None


@pytest.mark.parametrize("command", [["db", "status"], ["db", "status", "--json"], ["db", "url"]])
def test_a_malformed_read_url_is_one_line_without_its_password(cli, org, monkeypatch, command):
    monkeypatch.setenv("CLI_ORG_READ_URL", "postgresql://u:hunter2@h:notaport/db")
    code, out, err = cli(*command)
    assert code == 1 and out == "" and err.count("\n") == 1, (code, out, err)
    assert "CLI_ORG_READ_URL" in err and "hunter2" not in err
