"""The scale benchmark's bulk loader (benchmarks/scale.py) must leave the index a scan
leaves, or its latency figures would measure another index: postings, term counts and
BM25 statistics agree with the rows, and search and the fact arm find what was loaded."""

import pytest

from benchmarks.scale import AGENT, Words, load_chunks, load_facts
from cli_org.db.connect import connect
from cli_org.recall.facts_arm import recall_facts
from cli_org.store.agents import add_agent
from cli_org.vault.search import search

pytestmark = pytest.mark.slow


@pytest.fixture
def loaded(org, corpora):
    corpora("til")  # the generator draws its words from the TIL vault
    with org.admin() as conn:
        if not conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()["rolsuper"]:
            pytest.skip("the bulk loader skips triggers, which needs a superuser")
        conn.rollback()
        add_agent(conn, AGENT)
        conn.commit()
        timings: dict = {}
        words = Words(seed=3)
        load_facts(conn, 300, words, timings)
        load_chunks(conn, 200, words, timings)
    return org, timings


def test_the_loader_leaves_the_index_a_scan_leaves(loaded):
    org, timings = loaded
    assert {"facts_gin_build_s", "facts_pieces_build_s", "fact_hnsw_build_s", "chunks_hnsw_build_s"} <= set(timings)
    with org.admin() as conn:
        # The fact arm's own indexes (migrations 0020, 0021), rebuilt after the load.
        names = {r["indexname"] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = 'public'")}
        assert {"memory_facts_pieces", "memory_fact_vectors_embedding", "memory_facts_search"} <= names
        counts = conn.execute(
            "SELECT (SELECT count(*) FROM memory_facts WHERE valid_to IS NULL) AS facts,"
            " (SELECT count(*) FROM memory_fact_vectors) AS fact_vectors,"
            " (SELECT count(*) FROM vault_files) AS files,"
            " (SELECT count(*) FROM vault_chunks WHERE embedding IS NOT NULL) AS chunks"
        ).fetchone()
        assert counts == {"facts": 300, "fact_vectors": 300, "files": 50, "chunks": 200}
        # Term counts are the number of notes holding each term, as the scan keeps them.
        wrong = conn.execute(
            "SELECT count(*) AS n FROM vault_terms t FULL JOIN"
            " (SELECT term, count(*) AS df FROM vault_postings GROUP BY term) p USING (term)"
            " WHERE t.df IS DISTINCT FROM p.df"
        ).fetchone()["n"]
        assert wrong == 0
        # A note's length is the sum of its term frequencies, on the note and each posting.
        bad = conn.execute(
            "SELECT count(*) AS n FROM vault_files f"
            " WHERE f.length <> (SELECT sum(tf) FROM vault_postings p WHERE p.file_id = f.id)"
            "    OR EXISTS (SELECT 1 FROM vault_postings p WHERE p.file_id = f.id AND p.dl <> f.length)"
        ).fetchone()["n"]
        assert bad == 0
        stats = conn.execute("SELECT value::json AS v FROM vault_meta WHERE key = 'bm25_stats'").fetchone()["v"]
        assert stats["n"] == 50 and stats["avgdl"] > 0
        # Every index the benchmark times is back.
        indexes = {r["indexname"] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = 'public'")}
        assert {
            "memory_facts_search",
            "memory_facts_no_duplicate",
            "vault_chunks_tsv",
            "vault_chunks_embedding",
            "vault_postings_pkey",
            "vault_postings_file",
            "vault_postings_by_density",
        } <= indexes
        # The postings' key is a primary key again (dropped for the bulk load), and the
        # foreign key to the notes holds for every posting the load wrote with it off.
        assert (
            conn.execute(
                "SELECT count(*) AS n FROM pg_constraint WHERE conname = 'vault_postings_pkey' AND contype = 'p'"
            ).fetchone()["n"]
            == 1
        )
        assert (
            conn.execute(
                "SELECT count(*) AS n FROM vault_postings p"
                " WHERE NOT EXISTS (SELECT 1 FROM vault_files f WHERE f.id = p.file_id)"
            ).fetchone()["n"]
            == 0
        )
        fact = conn.execute("SELECT subject, claim FROM memory_facts ORDER BY id LIMIT 1").fetchone()
        chunk = conn.execute("SELECT file_id, content FROM vault_chunks ORDER BY id LIMIT 1").fetchone()
    with connect(org.settings, AGENT) as conn:
        hits = recall_facts(conn, fact["claim"].split(" (item")[0], project=None, limit=8)
        assert any(h.fact.claim == fact["claim"] for h in hits)
        found = search(conn, " ".join(chunk["content"].split()[:6]), mode="keyword", limit=10)
        assert chunk["file_id"] in {h.file_id for h in found.hits}
