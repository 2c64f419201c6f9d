"""A team server (docs/operations.md, Team server): an administrator that is no superuser, a server that
may lack pgvector, and pgvector added later without losing data."""

from __future__ import annotations

import json

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import sql as pgsql
from psycopg.conninfo import make_conninfo

from cli_org.config import Settings
from cli_org.db.connect import connect
from cli_org.db.migrate import NO_VECTORS, available, migrate, missing_extensions, pending, vectors_ready
from cli_org.errors import ConfigError
from cli_org.recall.answer import recall
from cli_org.store import facts
from cli_org.store.vectors import embed_missing
from cli_org.vault.embed import embed_pending
from cli_org.vault.search import search
from tests.fakes import HashEmbedder

pytestmark = pytest.mark.slow

VECTOR_MIGRATIONS = [
    "0017_fact_embeddings",
    "0018_vault_vectors",
    "0021_fact_vector_index",
    "0038_facts_without_vectors",
    "0039_restricted_vectors",
]


def _cli(env: dict[str, str], *args: str, agent: str | None = None):
    from cli_org.faces.cli import cli as group

    extra = {"ORG_AGENT": agent} if agent else {"ORG_AGENT": None}
    result = CliRunner().invoke(group, list(args), env={**env, "ORG_VIA": None, **extra}, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _vault(tmp_path):
    (tmp_path / "vault").mkdir()
    (tmp_path / "vault" / "deploy.md").write_text("# Deploys\nWe deploy on Tuesdays after the standup.\n")
    (tmp_path / "vault" / "bread.md").write_text("# Bread\nKnead the dough for ten minutes.\n")
    return tmp_path / "vault"


def _without_vectors_everything_else_works(env: dict[str, str], settings: Settings, tmp_path) -> None:
    """What works on a server without pgvector, asserted through the CLI as users see it."""
    code, out, err = _cli(env, "agents", "add", "scout", "--json")
    assert code == 0, err
    code, out, err = _cli(
        env, "remember", "deploys", "we deploy on tuesdays", "--source", "https://x.org/1", agent="scout"
    )
    assert code == 0, err
    code, out, err = _cli(env, "notebook", "add", "--target", "memory", "staging is flaky on fridays", agent="scout")
    assert code == 0, err
    code, out, err = _cli(env, "vault", "scan", str(_vault(tmp_path)), "--json")
    assert code == 0, err
    assert json.loads(out)["scan"]["added"] == 2
    # Keyword search works and says nothing; hybrid and semantic fall back with one notice.
    code, out, err = _cli(env, "search", "deploy tuesdays", "--mode", "keyword", "--json")
    assert code == 0 and json.loads(out)["notice"] is None
    for mode in ("hybrid", "semantic"):
        code, out, err = _cli(env, "search", "deploy tuesdays", "--mode", mode, "--json")
        data = json.loads(out)
        assert code == 0 and data["used"] == "keyword" and data["notice"] == f"{NO_VECTORS}; showing keyword results"
        assert data["hits"][0]["path"] == "deploy.md"
    # Recall with a query model in hand: every arm answers by keyword, one notice.
    with connect(settings, "scout") as conn:
        result = recall(conn, "when do we deploy", settings=settings, embedder=HashEmbedder(), log=False)
    assert result.notice == f"{NO_VECTORS}; showing keyword results"
    assert {h.arm for h in result.hits} >= {"fact", "vault"}
    code, out, err = _cli(env, "recall", "staging flaky", "--json", agent="scout")
    assert code == 0 and any(h["arm"] == "memory" for h in json.loads(out)["hits"]), out
    # Embedding says why it cannot, in one line, before it loads a model or writes anything.
    code, out, err = _cli(env, "vault", "embed")
    assert code == 1 and out == "" and err == f"cli-org: {NO_VECTORS}\n"
    code, out, err = _cli(env, "facts", "embed")
    assert code == 1 and out == "" and err == f"cli-org: {NO_VECTORS}\n"
    # A write given a model lands without a vector (there is nowhere to keep one).
    with connect(settings, "scout") as conn:
        kept = facts.remember(conn, "deploy end", "by four", source="https://x.org/2", embedder=HashEmbedder())
    assert kept.id and not kept.duplicate
    with connect(settings, "scout") as conn, pytest.raises(ConfigError, match="vectors are unavailable"):
        embed_missing(conn, HashEmbedder())
    with connect(settings) as conn:
        with pytest.raises(Exception, match="vectors are unavailable"):
            embed_pending(conn, HashEmbedder())
        assert not vectors_ready(conn)
        assert [f"{m.version:04d}_{m.name}" for m in pending(conn) or []] == VECTOR_MIGRATIONS
        assert missing_extensions(conn) == {"vector": VECTOR_MIGRATIONS}
    code, out, err = _cli(env, "db", "status", "--json")
    assert code == 0 and json.loads(out)["waiting_for_extensions"] == {"vector": VECTOR_MIGRATIONS}
    code, out, err = _cli(env, "db", "status")
    assert "wait for the extension vector" in out


def test_no_pgvector_on_this_server(org, tmp_path):
    """The team-server pass (CI): the server itself has no pgvector."""
    if org.server.vectors:
        pytest.skip("this server has pgvector; test_vectors_added_later covers the fallback here")
    _without_vectors_everything_else_works(org.env, org.settings, tmp_path)


@pytest.fixture
def restricted(blank_db):
    """The database as a managed service hands it over: owned by an administrator with LOGIN,
    CREATEROLE and CREATEDB but no superuser, so it may not create pgvector (not a trusted
    extension) until someone who may enables it. Needs the embedded server's superuser."""
    if blank_db.server.data_dir is None:
        pytest.skip("needs the embedded server's superuser to play the service that enables pgvector")
    admin = f"{blank_db.name}_admin"
    with psycopg.connect(blank_db.server.admin_url, autocommit=True) as conn:
        conn.execute(
            pgsql.SQL("CREATE ROLE {} LOGIN CREATEROLE CREATEDB PASSWORD 'admin-pw'").format(pgsql.Identifier(admin))
        )
        conn.execute(
            pgsql.SQL("ALTER DATABASE {} OWNER TO {}").format(pgsql.Identifier(blank_db.name), pgsql.Identifier(admin))
        )
    url = make_conninfo(
        host=blank_db.server.tcp_host,
        port=blank_db.server.tcp_port,
        dbname=blank_db.name,
        user=admin,
        password="admin-pw",
    )
    env = {"CLI_ORG_DATABASE_URL": url}
    return blank_db, env, Settings.from_env(env)


def test_vectors_added_later(restricted, tmp_path):
    blank_db, env, settings = restricted
    code, out, err = _cli(env, "init", "--owner", "boss")
    assert code == 0, err
    assert "vectors are unavailable" in err and "0017_fact_embeddings, 0018_vault_vectors" in err
    with connect(settings) as conn:
        assert not conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()["rolsuper"]
        conn.rollback()
    _without_vectors_everything_else_works(env, settings, tmp_path)
    # The administrator (no superuser) acts as an agent, and reads notebooks as the admin.
    code, out, err = _cli(env, "notebook", "show", "--target", "memory", "--json", agent="scout")
    assert code == 0 and "staging is flaky" in out

    # The service enables pgvector in the database; init again applies what waited.
    with psycopg.connect(blank_db.server.url(blank_db.name), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")
    code, out, err = _cli(env, "init", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["applied"] == [*VECTOR_MIGRATIONS, "repeatable/vectors"] and result["notice"] is None
    with connect(settings) as conn:
        assert vectors_ready(conn) and pending(conn) == []
        conn.rollback()
        assert embed_pending(conn, HashEmbedder()).embedded == 2
        hybrid = search(conn, "deploy tuesdays", mode="hybrid", embedder=HashEmbedder())
    assert hybrid.notice is None and hybrid.used == "hybrid" and hybrid.hits[0].path == "deploy.md"
    with connect(settings, "scout") as conn:
        again = recall(conn, "when do we deploy", settings=settings, embedder=HashEmbedder(), log=False)
    assert again.notice is None
    assert any(h.arm == "fact" and "tuesdays" in h.text for h in again.hits)
    # Nothing stored before was lost: the fact, the notebook line, both notes.
    code, out, err = _cli(env, "facts", "--json", agent="scout")
    assert sorted(f["claim"] for f in json.loads(out)) == ["by four", "we deploy on tuesdays"]
    code, out, err = _cli(env, "notebook", "show", "--target", "memory", "--json", agent="scout")
    assert "staging is flaky" in out


@pytest.mark.vectors
def test_a_database_made_before_the_split_upgrades_cleanly(blank_db):
    """Before issue 14, 0002 itself created pgvector, the chunks' embedding column and its two
    indexes, and 0017 had no marker. Such a database takes 0018 onwards and keeps its vectors."""
    new = {m.version: m for m in available()}
    v2 = new[2]
    old_sql = "CREATE EXTENSION IF NOT EXISTS vector;\n" + v2.sql.replace(
        "    tsv         tsvector NOT NULL,\n", "    tsv         tsvector NOT NULL,\n    embedding   vector(384),\n"
    ).replace(
        "CREATE INDEX vault_chunks_tsv ON vault_chunks USING gin (tsv);\n",
        "CREATE INDEX vault_chunks_tsv ON vault_chunks USING gin (tsv);\n"
        "CREATE INDEX vault_chunks_unembedded ON vault_chunks (id) WHERE embedding IS NULL;\n"
        "CREATE INDEX vault_chunks_embedding ON vault_chunks USING hnsw (embedding vector_cosine_ops);\n",
    )
    assert "embedding   vector(384)" in old_sql and "vault_chunks_embedding" in old_sql
    # As the files were then: no `-- requires:` markers (a Migration without `needs`).
    old = [type(m)(v, m.name, old_sql if v == 2 else m.sql) for v, m in sorted(new.items()) if v <= 17]
    from cli_org.db import migrate as mod

    with connect(blank_db.settings) as conn:
        original = mod.available
        mod.available = lambda: old + [m for v, m in sorted(new.items()) if v > 17]  # type: ignore[assignment]
        try:  # the function files, then 0001 to 0017 as they were
            assert [m.version for m in migrate(conn, only=range(1, 18)) if m.version] == list(range(1, 18))
        finally:
            mod.available = original
        conn.execute("INSERT INTO vault_files (path, title, hash, size, mtime) VALUES ('a.md', 'A', 'h', 1, 0)")
        vec = "[" + ",".join(["0.5"] * 384) + "]"
        conn.execute(
            "INSERT INTO vault_chunks (file_id, ord, heading, content, hash, tsv, embedding, embed_model)"
            " SELECT id, 0, '', 'x', 'h', to_tsvector('x'), %s::vector, 'm' FROM vault_files",
            (vec,),
        )
        conn.commit()
        assert [m.label for m in migrate(conn)] == [new[v].label for v in sorted(new) if v >= 18] + [
            m.label for m in mod.repeatables() if not m.first
        ]
        assert vectors_ready(conn) and pending(conn) == []
        row = conn.execute("SELECT embedding::text AS e FROM vault_chunks").fetchone()
        assert row["e"] == vec
        names = {
            r["indexname"] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'vault_chunks'")
        }
        conn.rollback()
    assert {"vault_chunks_embedding", "vault_chunks_unembedded"} <= names


def test_init_as_a_non_superuser_leaves_no_superuser_step(org):
    """Whatever the server, init's objects belong to the admin that ran it, and every agent
    role is a plain member (no superuser, no CREATEROLE, no CREATEDB, no BYPASSRLS)."""
    with org.admin() as conn:
        roles = conn.execute(
            "SELECT r.rolname, r.rolsuper, r.rolcreaterole, r.rolcreatedb, r.rolbypassrls"
            " FROM org_agents a JOIN pg_roles r ON r.rolname = a.role_name"
        ).fetchall()
    assert roles and not any(
        r["rolsuper"] or r["rolcreaterole"] or r["rolcreatedb"] or r["rolbypassrls"] for r in roles
    )


def test_the_admin_cannot_be_fooled_into_reading_as_a_member(org):
    """0019: an agent logged in as itself never passes the admin branch of the notebook rule,
    even though the admin may now be a member of the agent's role."""
    with org.as_agent("bot") as conn:
        conn.execute("SELECT org_notebook_lock()")
        conn.execute("INSERT INTO notebook_entries (store, body) VALUES ('memory', 'only mine')")
        conn.commit()
    with org.login(f"{org.name}_other", "other-pw") as conn:
        assert conn.execute("SELECT public.org_notebook_readable('bot') AS ok").fetchone()["ok"] is False
        assert conn.execute("SELECT count(*) AS n FROM notebook_entries WHERE agent = 'bot'").fetchone()["n"] == 0
