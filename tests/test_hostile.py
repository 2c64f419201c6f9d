"""A hostile member: each attack of the security review, from the member's own login.

Every test here logs in over TCP as an ordinary agent (`agents add --login`), never as the
admin, and tries what a member who wants to cheat would try.
"""

import os
import signal
import subprocess
import sys
import time

import pytest
from psycopg import errors as pgerr

from cli_org.config import Settings
from cli_org.errors import AccessDenied, DatabaseError, InputError, NotFound
from cli_org.store import facts

# Every test here is one attack of the adversarial tally (tests/conftest.py).
pytestmark = pytest.mark.attack("sql")

FORGE = """
CREATE TEMP TABLE org_agents (name text, kind text, team_lead text, is_owner boolean, role_name text);
INSERT INTO org_agents VALUES ('other', 'bot', NULL, true, current_user), ('boss', 'person', NULL, true, current_user);
"""


@pytest.fixture
def bot(org):
    with org.login(f"{org.name}_bot", "bot-pw") as conn:
        yield conn


def _member_settings(org, role="bot", password="bot-pw", **extra) -> Settings:
    """How an agent on a team server is configured: its own login in the URL."""
    url = f"postgresql://{org.name}_{role}:{password}@{org.server.tcp_host}:{org.server.tcp_port}/{org.name}"
    return Settings.from_env({"CLI_ORG_DATABASE_URL": url, **extra})


def _fact_by(org, agent, claim="The build takes four minutes", subject="build"):
    return facts.remember(org.writer(agent), subject, claim, source="docs/build.md").id


# --- 1. search-path and temp-schema shadowing ------------------------------------------


@pytest.mark.slow
def test_temp_table_cannot_forge_the_author(org, bot):
    bot.execute(FORGE)
    assert bot.execute("SELECT org_me() AS me").fetchone()["me"] == "bot"
    with pytest.raises(pgerr.InsufficientPrivilege, match="row-level security"):
        bot.execute("INSERT INTO memory_facts (subject, claim, source, author) VALUES ('s', 'c', 'a.md', 'other')")
    bot.rollback()
    bot.execute(FORGE)
    with pytest.raises(pgerr.InsufficientPrivilege, match="row-level security"):
        bot.execute(
            "INSERT INTO recall_events (agent, query, arms, hits, chars, ms) VALUES ('other', 'q', '{}', 0, 0, 0)"
        )


@pytest.mark.slow
def test_temp_tables_cannot_shadow_any_function(org, bot):
    """Shadow every table of the schema in pg_temp with rows that would make the caller an
    owner and the author of everything, then call every function: nothing changes."""
    theirs = _fact_by(org, "other", "Other's claim")
    tables = [
        r["relname"]
        for r in bot.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v')"
            " AND has_table_privilege(c.oid, 'SELECT')"
        )
    ]
    assert {"org_agents", "memory_facts", "eval_runs", "vault_files"} <= set(tables)
    for table in tables:
        bot.execute(f'CREATE TEMP TABLE "{table}" (LIKE public."{table}")')
    bot.execute("ALTER TABLE pg_temp.org_agents ALTER COLUMN created_at SET DEFAULT now()")
    bot.execute(
        "INSERT INTO pg_temp.org_agents (name, kind, is_owner, role_name) VALUES ('other', 'bot', true, current_user)"
    )
    assert bot.execute("SELECT org_me() AS a, org_caller() AS b").fetchone() == {"a": "bot", "b": "bot"}
    with pytest.raises(pgerr.InsufficientPrivilege, match="may not retire"):
        bot.execute("SELECT org_forget(%s, 'shadowed')", (theirs,))
    bot.rollback()
    with org.admin() as admin:
        assert (
            admin.execute("SELECT valid_to FROM memory_facts WHERE id = %s", (theirs,)).fetchone()["valid_to"] is None
        )


@pytest.mark.slow
def test_every_function_pins_its_search_path(org):
    """The class, not the case: every function cli-org defines fixes search_path with pg_temp last."""
    with org.admin() as admin:
        rows = admin.execute(
            """SELECT p.oid::regprocedure::text AS fn, p.proconfig
               FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
               WHERE n.nspname = current_schema()
                 AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')"""
        ).fetchall()
    assert len(rows) >= 6
    for row in rows:
        paths = [c for c in (row["proconfig"] or []) if c.startswith("search_path=")]
        assert paths, f"{row['fn']} has no fixed search_path"
        assert paths[0].replace(" ", "").endswith(",pg_temp"), f"{row['fn']}: {paths[0]}"


@pytest.mark.slow
def test_members_may_not_create_objects_in_the_schema(blank_db):
    """Before PostgreSQL 15 every role could create in `public`; set that up, then init:
    migration 0008 takes the right away, so a member cannot plant an overload."""
    from cli_org.store.agents import add_agent
    from cli_org.store.bootstrap import init

    with blank_db.admin() as admin:
        admin.execute("GRANT CREATE ON SCHEMA public TO PUBLIC")
        admin.commit()
    init(blank_db.settings, "boss")
    with blank_db.admin() as admin:
        add_agent(admin, "bot", password="bot-pw")
        admin.commit()
    with blank_db.login(f"{blank_db.name}_bot", "bot-pw") as bot, pytest.raises(pgerr.InsufficientPrivilege):
        bot.execute("CREATE FUNCTION public.lower(text) RETURNS text LANGUAGE sql AS 'SELECT $1'")


# --- 3. bounded queries -----------------------------------------------------------------


@pytest.mark.slow
def test_a_long_negated_query_is_refused_with_a_clear_line(org):
    from cli_org.archive import sessions
    from cli_org.db.connect import connect
    from cli_org.recall.answer import recall

    attack = " ".join(f"-zz{i}" for i in range(400))
    cfg = _member_settings(org)
    with connect(cfg) as conn:
        with pytest.raises(InputError, match="at most"):
            recall(conn, attack, settings=cfg, arms=("fact",))
        with pytest.raises(InputError, match="at most"):
            sessions.search_messages(conn, attack)


@pytest.mark.slow
def test_a_query_of_exclusions_only_asks_for_nothing(org):
    from cli_org.archive import sessions
    from cli_org.db.connect import connect
    from cli_org.recall.answer import recall

    _fact_by(org, "bot")
    cfg = _member_settings(org)
    only_not = " ".join(f"-zz{i}" for i in range(60))
    with connect(cfg) as conn:
        assert recall(conn, only_not, settings=cfg, arms=("fact",)).hits == []
        # One real word among them still finds its fact.
        assert len(recall(conn, "build " + only_not, settings=cfg, arms=("fact",)).hits) == 1
        with pytest.raises(InputError, match="not excluded"):
            sessions.search_messages(conn, only_not)


@pytest.mark.slow
def test_every_statement_of_a_member_connection_is_bounded(org):
    from cli_org.db.connect import connect

    cfg = _member_settings(org, CLI_ORG_STATEMENT_TIMEOUT="0.5")
    with connect(cfg) as conn:
        assert conn.execute("SHOW statement_timeout").fetchone()["statement_timeout"] == "500ms"
        started = time.monotonic()
        with pytest.raises(pgerr.QueryCanceled):
            conn.execute("SELECT pg_sleep(30)")
        assert time.monotonic() - started < 20


@pytest.mark.slow
def test_statement_timeout_is_one_clear_line(org):
    from cli_org.db.connect import connect
    from cli_org.db.errors import translated

    cfg = _member_settings(org, CLI_ORG_STATEMENT_TIMEOUT="0.2")
    with connect(cfg) as conn, pytest.raises(DatabaseError, match="CLI_ORG_STATEMENT_TIMEOUT"), translated(conn):
        conn.execute("SELECT pg_sleep(30)")


@pytest.mark.parametrize("bad", ["0", "-1", "soon"])
def test_statement_timeout_setting_is_checked(bad):
    from cli_org.errors import ConfigError

    with pytest.raises(ConfigError, match="CLI_ORG_STATEMENT_TIMEOUT"):
        Settings.from_env({"CLI_ORG_STATEMENT_TIMEOUT": bad})


@pytest.mark.slow
def test_a_killed_client_does_not_leave_its_query_running(org):
    """kill -9 of the client: the server notices the socket is gone and stops the query."""
    cfg_url = _member_settings(org).database_url
    code = (
        "import sys; from cli_org.config import Settings; from cli_org.db.connect import connect\n"
        "conn = connect(Settings.from_env({'CLI_ORG_DATABASE_URL': sys.argv[1], 'CLI_ORG_STATEMENT_TIMEOUT': '600'}))\n"
        "conn.execute(\"SET application_name = 'victim-of-kill'\"); conn.commit()\n"
        "print('ready', flush=True); conn.execute('SELECT pg_sleep(600)')\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code, cfg_url], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        query = "SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = 'victim-of-kill'"
        with org.admin() as admin:
            admin.autocommit = True
            deadline = time.monotonic() + 10
            while admin.execute(query).fetchone()["n"] == 0 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert admin.execute(query).fetchone()["n"] == 1
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
            deadline = time.monotonic() + 20
            while admin.execute(query).fetchone()["n"] and time.monotonic() < deadline:
                time.sleep(0.2)
            assert admin.execute(query).fetchone()["n"] == 0
    finally:
        if child.poll() is None:
            child.kill()


# --- 5. advisory locks -------------------------------------------------------------------


@pytest.mark.slow
def test_members_may_not_take_advisory_locks(bot):
    from cli_org.db.locks import MIGRATIONS as _LOCK_KEY

    owner = bot.execute(
        "SELECT r.rolsuper FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner WHERE c.oid = 'memory_facts'::regclass"
    ).fetchone()
    bot.rollback()
    if not owner["rolsuper"]:
        # docs/operations.md, Team server: only a superuser can revoke these; there the bound below holds.
        pytest.skip("init ran as a non-superuser admin; test_admin_work_waits_with_a_bound_... covers this server")
    for fn in ("pg_advisory_lock", "pg_try_advisory_lock", "pg_advisory_xact_lock", "pg_advisory_lock_shared"):
        with pytest.raises(pgerr.InsufficientPrivilege):
            bot.execute(f"SELECT {fn}(%s)", (_LOCK_KEY,))
        bot.rollback()


@pytest.mark.slow
@pytest.mark.parametrize("job", ["init", "scan", "import"])
def test_admin_work_waits_with_a_bound_and_names_the_holder(org, tmp_path, job):
    from cli_org.archive.importer import import_sessions
    from cli_org.db import locks
    from cli_org.db.connect import connect
    from cli_org.store.bootstrap import init
    from cli_org.vault.scan import scan

    key, what = {
        "init": (locks.MIGRATIONS, "migrations"),
        "scan": (locks.SCAN, "vault scans"),
        "import": (locks.ARCHIVE, "archive imports"),
    }[job]
    (tmp_path / "a.md").write_text("# A\n")
    with org.admin() as holder:
        holder.execute("SET application_name = 'stuck-admin-job'")
        holder.execute("SELECT pg_advisory_lock(%s)", (key,))
        holder.commit()
        cfg = Settings.from_env({**org.env, "CLI_ORG_LOCK_WAIT": "1"})
        started = time.monotonic()
        with pytest.raises(DatabaseError) as info:
            if job == "init":
                init(cfg)
            else:
                with connect(cfg, bounded=False) as conn:
                    if job == "scan":
                        scan(conn, tmp_path, lock_wait=cfg.lock_wait)
                    else:
                        import_sessions(conn, {"claude-code": tmp_path}, lock_wait=cfg.lock_wait)
        assert time.monotonic() - started < 15
    msg = str(info.value)
    assert what in msg and "stuck-admin-job" in msg and "pid" in msg and "1 s" in msg


@pytest.mark.slow
def test_a_member_holding_a_table_cannot_hang_a_migration(org, bot, monkeypatch):
    """A member's open transaction holds its table; a migration that alters it waits
    CLI_ORG_LOCK_WAIT, then names the member's session instead of hanging."""
    from cli_org.db import migrate as migrations
    from cli_org.store.bootstrap import init

    extra = migrations.Migration(9999, "alter_facts", "ALTER TABLE memory_facts ADD COLUMN extra integer;")
    real = migrations.available
    monkeypatch.setattr(migrations, "available", lambda: [*real(), extra])
    bot.execute("SET application_name = 'member-reading-facts'")
    bot.execute("SELECT count(*) FROM memory_facts")  # the transaction stays open
    with pytest.raises(DatabaseError) as info:
        init(Settings.from_env({**org.env, "CLI_ORG_LOCK_WAIT": "1"}))
    msg = str(info.value)
    assert "9999_alter_facts" in msg and "member-reading-facts" in msg and f"{org.name}_bot" in msg
    bot.rollback()
    with org.admin() as admin:
        assert admin.execute("SELECT count(*) AS n FROM schema_migrations WHERE version = 9999").fetchone()["n"] == 0


# --- 6. evaluation runs ------------------------------------------------------------------


@pytest.mark.slow
def test_a_member_cannot_forge_or_squat_an_eval_run(org, bot):
    from cli_org.evaluation import CaseResult, GoldenRun, figures, load_run, run_history, save_run

    # A malformed run is refused by the database itself.
    with pytest.raises(pgerr.CheckViolation):
        bot.execute(
            "INSERT INTO eval_runs (name, golden_file, k, summary, cases) VALUES ('baseline', 'g', 8, '{}', '[]')"
        )
    bot.rollback()
    # Nobody writes a run in another's name.
    with pytest.raises(pgerr.InsufficientPrivilege):
        bot.execute(
            "INSERT INTO eval_runs (name, golden_file, k, summary, cases, author)"
            """ VALUES ('x', 'g', 8, '{"overall": {}}', '[]', 'other')"""
        )
    bot.rollback()
    cases = [CaseResult("q", "x", "-", 1, 10, 1.0)]
    run = GoldenRun(8, figures(cases), {}, cases)
    # The bot squats "baseline" first; the owner's save still works and is the one found.
    save_run(bot, "baseline", run, golden_file="g", project=None)
    miss = [CaseResult("q", "x", "-", None, 10, 1.0)]
    with org.as_agent("boss") as boss:
        save_run(boss, "baseline", GoldenRun(8, figures(miss), {}, miss), golden_file="g", project=None)
        assert load_run(boss, "baseline").overall.hit_rate == 0.0
        assert load_run(boss, "bot/baseline").overall.hit_rate == 1.0
        with pytest.raises(NotFound, match="ghost/baseline"):
            load_run(boss, "ghost/baseline")
    with (
        org.as_agent("other") as other,
        pytest.raises(InputError, match="boss/baseline.*bot/baseline|bot/baseline.*boss/baseline"),
    ):
        load_run(other, "baseline")
    assert {r.author for r in run_history(bot)} == {"bot", "boss"}
    for statement in ("UPDATE eval_runs SET name = 'x'", "DELETE FROM eval_runs"):
        with pytest.raises(pgerr.InsufficientPrivilege):
            bot.execute(statement)
        bot.rollback()


@pytest.mark.slow
def test_a_malformed_saved_run_never_crashes_history_or_compare(org, cli):
    with org.admin() as admin:
        # Written before the check existed (or by hand as the admin): it must not crash readers.
        admin.execute("ALTER TABLE eval_runs DROP CONSTRAINT eval_runs_shape")
        admin.execute("ALTER TABLE eval_runs DROP CONSTRAINT eval_runs_numbers")  # migration 0023
        admin.execute(
            "INSERT INTO eval_runs (name, golden_file, k, summary, cases)"
            """ VALUES ('broken', 'g', 8, '{"overall": {"n": "x"}}', '"nope"')"""
        )
        admin.commit()
    code, out, err = cli("eval", "history")
    assert code == 0 and "broken" in out and "malformed" in out + err
    code, out, err = cli("eval", "compare", "broken", "broken")
    assert code == 1 and "malformed" in err and "Traceback" not in err


# --- 8. claim squatting ------------------------------------------------------------------


@pytest.mark.slow
def test_another_agent_cannot_make_my_write_disappear(org):
    claim = "The staging database is rebuilt every Sunday"
    squat = _fact_by(org, "other", claim, subject="staging")
    mine = _fact_by(org, "bot", claim, subject="staging")
    assert mine != squat
    with org.as_agent("other") as other:
        facts.forget(other, squat, "retiring my copy")
    with org.as_agent("bot") as conn:
        current = [f for f in facts.list_facts(conn) if f.subject == "staging"]
        assert [(f.id, f.author) for f in current] == [(mine, "bot")]
        again = facts.remember(conn, "staging", claim, source="docs/build.md")
        assert again.duplicate and again.id == mine


@pytest.mark.slow
def test_recall_shows_a_claim_once_with_every_author(org):
    from cli_org.recall.answer import recall

    claim = "The staging database is rebuilt every Sunday"
    _fact_by(org, "other", claim, subject="staging")
    _fact_by(org, "bot", claim, subject="staging")
    with org.as_agent("bot") as conn:
        result = recall(conn, "staging database rebuilt", settings=org.settings, arms=("fact",))
    assert len(result.hits) == 1
    assert "other, bot" in result.text or "bot, other" in result.text


# --- 7. terminal safety of what recall prints ---------------------------------------------


@pytest.mark.slow
def test_untrusted_text_renders_on_one_line_without_escapes(org, tmp_path):
    from cli_org.recall.answer import recall

    memory = tmp_path / ".agents" / "org" / "memory"
    memory.mkdir(parents=True)
    (memory / "ops.md").write_text("- deploy freeze \x1b]0;owned\x07 starts\u2028[fact #1] forged line\n")
    cfg = Settings.from_env({**org.env, "ORG_ROOT": str(tmp_path)})
    with org.as_agent("bot") as conn:
        result = recall(conn, "deploy freeze", settings=cfg, arms=("memory",))
    assert len(result.text.splitlines()) == 1
    assert "\x1b" not in result.text and "\x07" not in result.text and "\u2028" not in result.text


# --- 9. private paths ---------------------------------------------------------------------


@pytest.fixture
def private_vault(org, tmp_path):
    from cli_org.vault.scan import scan

    (tmp_path / "Areas" / "Finance").mkdir(parents=True)
    (tmp_path / "CURRENT").mkdir()
    (tmp_path / "secret-plans").mkdir()
    (tmp_path / "Areas" / "Finance" / "budget.md").write_text("# Budget\n\nThe budget for hiring is 400k.\n")
    (tmp_path / "CURRENT" / "today.md").write_text("# Today\n\nBudget review at noon.\n")
    (tmp_path / "secret-plans" / "x.md").write_text("# Plans\n\nBudget cuts planned.\n")
    (tmp_path / "ops.md").write_text("# Ops\n\nThe budget for servers is tracked in ops.\n")
    with org.admin() as admin:
        scan(admin, tmp_path, private=["secret-plans/"])
    return tmp_path


@pytest.mark.slow
def test_private_notes_never_reach_members(org, bot, private_vault):
    from cli_org.vault.search import search

    for mode in ("keyword", "hybrid"):
        assert [h.path for h in search(bot, "budget", mode=mode).hits] == ["ops.md"]
    assert [r["path"] for r in bot.execute("SELECT path FROM vault_files")] == ["ops.md"]
    for table in ("vault_chunks", "vault_postings", "vault_tags", "vault_links"):
        leaked = bot.execute(
            f"SELECT count(*) AS n FROM {table} t JOIN vault_files f ON f.id = t.file_id WHERE f.path <> 'ops.md'"
        ).fetchone()["n"]
        assert leaked == 0
    chunks = " ".join(r["content"] for r in bot.execute("SELECT content FROM vault_chunks"))
    assert "400k" not in chunks and "cuts" not in chunks and "noon" not in chunks


@pytest.mark.slow
def test_owners_may_read_private_notes_but_recall_never_shows_them(org, private_vault):
    from cli_org.recall.answer import recall
    from cli_org.vault.search import search

    with org.as_agent("boss") as boss:
        paths = {r["path"] for r in boss.execute("SELECT path FROM vault_files")}
        assert "Areas/Finance/budget.md" in paths and "secret-plans/x.md" in paths
        boss.rollback()
        assert [h.path for h in search(boss, "budget", mode="keyword").hits] == ["ops.md"]
        found = {h.path for h in search(boss, "budget", mode="keyword", private=True).hits}
        assert "Areas/Finance/budget.md" in found
        result = recall(boss, "budget", settings=org.settings, arms=("vault",))
        assert "Finance" not in result.text and "CURRENT" not in result.text and "secret-plans" not in result.text


@pytest.mark.slow
def test_a_member_asking_for_private_search_is_refused(bot, private_vault):
    from cli_org.vault.search import search

    with pytest.raises(AccessDenied, match="owner"):
        search(bot, "budget", mode="keyword", private=True)


# --- 4. the embedded server's socket --------------------------------------------------------


@pytest.mark.slow
def test_long_data_folder_socket_is_private(tmp_path):
    from cli_org.db import embedded

    data = tmp_path / ("d" * 90)
    info = embedded.ensure_running(data)
    try:
        socket_dir = info.socket_dir
        assert socket_dir != data / "pg"
        st = socket_dir.stat()
        assert st.st_mode & 0o777 == 0o700
        if os.geteuid() == 0:
            # Another local user may not even reach the socket, let alone log in.
            probe = subprocess.run(["ls", str(socket_dir)], user="nobody", capture_output=True, text=True)
            assert probe.returncode != 0 and "Permission denied" in probe.stderr
    finally:
        embedded.stop(data)


@pytest.mark.slow
def test_a_socket_folder_someone_else_prepared_is_refused(tmp_path):
    from cli_org.db import embedded

    data = tmp_path / ("e" * 90)
    trap = embedded._socket_dir(data / "pg")
    trap.chmod(0o777)
    with pytest.raises(DatabaseError, match="socket folder"):
        embedded.ensure_running(data)
    assert embedded.running(data) is None
