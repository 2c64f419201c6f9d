"""The [fact] arm reads a bounded part of an index per query (issue 14, part 4; migrations
0020 and 0021): the lexical passes ask the word-piece index for candidates and keep their
exact tests, the semantic pass reads its candidates from the HNSW graph and its background
from a sample. The answers must be the ones a full read gives."""

from __future__ import annotations

import pytest

from cli_org.db.queries import sql
from cli_org.recall.facts_arm import RANK_CAP, _lexical, _nearest, recall_facts
from cli_org.recall.terms import needed, positive_words, terms, word_start_patterns
from cli_org.shaping import FACT_SHAPING
from cli_org.store import facts
from cli_org.vault.embedders import vector_literal
from tests.fakes import HashEmbedder

pytestmark = pytest.mark.slow

# The passes as they were before the index (a full read): the oracle.
OLD_STRICT = """
SELECT id FROM memory_facts
WHERE valid_to IS NULL
  AND (search @@ websearch_to_tsquery('english', %(query)s)
       OR (%(substring)s AND (strpos(lower(subject), lower(%(query)s)) > 0
                              OR strpos(lower(claim), lower(%(query)s)) > 0)))
ORDER BY ts_rank_cd(search, websearch_to_tsquery('english', %(query)s)) DESC, created_at DESC
LIMIT 16"""
OLD_LOOSE = """
SELECT id FROM (
    SELECT id, created_at, (SELECT count(*) FROM unnest(%(patterns)s::text[]) AS p
                            WHERE (subject || ' ' || claim) ~* p) AS matched
    FROM memory_facts WHERE valid_to IS NULL) f
WHERE matched >= %(need)s
ORDER BY matched DESC, created_at DESC
LIMIT 16"""

TRICKY = [
    ("PostgreSQL replication", "Streaming replicas lag under vacuum; see pg_stat_replication."),
    ("e-mail relay", "Outgoing e-mail goes through relay.example.internal on port 2525."),
    ("naïve café", "The Café-Überwachung job runs nightly at 02:00 UTC."),
    ("long word", "x" * 200 + "needle" + "y" * 100),
    ("underscores", "Set MAX_POOL_SIZE=32 in the worker_config block."),
    ("don't", "Don't deploy on Fridays; rollbacks take 40 minutes."),
    ("C++ build", "The C++ toolchain is clang-17 with -O2."),
    ("retired", "This one is forgotten."),
]
QUERIES = [
    "gres",  # inside a word: only the substring test finds it
    "ostgreSQL repl",
    "replication",
    "stat_repl",
    "-mail relay",
    "mail",
    "e-mail",
    "relay.example",
    "caf",
    "Überwach",
    "überwachung job",
    "needle",
    "xneedley",
    "pool_size",
    "MAX_POOL",
    "don't deploy",
    "dont",
    "rollbacks friday minutes",
    "C++",
    "clang-17 -O2",
    "toolchain clang nightly unknown words here",
    "forgotten",
    "ab",
    "zz zz zz",
    "???",
    "a b c d",
    "replica lag vacuum relay",
    # long questions: the loose pass splits the terms into groups (facts_arm._loose_pieces)
    "streaming replicas lag vacuum relay port nightly job toolchain clang rollbacks minutes fridays",
    "deploy deploys deployed rollbacks take forty minutes on fridays with the toolchain clang at nightly",
    "worker config block pool size set thirty two streaming replica relay outgoing mail port job runs",
]


def _old(conn, query: str) -> list[int]:
    query = query.strip()
    if not positive_words(query):
        return []
    rows = conn.execute(OLD_STRICT, {"query": query, "substring": len(query) >= 3}).fetchall()
    if rows:
        return [r["id"] for r in rows]
    words = terms(" ".join(positive_words(query)))
    if not words:
        return []
    params = {"patterns": word_start_patterns(words), "need": needed(len(words))}
    return [r["id"] for r in conn.execute(OLD_LOOSE, params).fetchall()]


def test_the_index_backed_passes_answer_as_a_full_read(org):
    """Substrings inside words, punctuation, underscores, accents, a 300-character word, a
    retired fact: every query finds what the passes found when they read every fact."""
    with org.as_agent("bot") as conn:
        for subject, claim in TRICKY:
            facts.remember(conn, subject, claim, source="docs/t.md")
        gone = facts.remember(conn, "retired", "Retired: an old claim about PostgreSQL gres.", source="docs/t.md")
        facts.forget(conn, gone.id, "superseded")
    with org.as_agent("lead") as conn:
        for query in QUERIES:
            got = [h.fact.id for h in _lexical(conn, query, project=None, limit=8)]
            conn.commit()
            want = list(dict.fromkeys(_old(conn, query)))[:8]
            conn.rollback()
            assert got == want, query
        assert gone.id not in [h.fact.id for h in _lexical(conn, "gres", project=None, limit=8)]


def _holds(query: str | None, pieces: set[str]) -> bool:
    """Whether a fact holding `pieces` (each a word's first run) matches a loose pass's
    tsquery, an OR of ANDs of prefixes, read as `_loose_pieces` writes it."""
    if query is None:
        return True
    return any(
        all(any(p.startswith(a.strip("()' ").removesuffix("':*")) for p in pieces) for a in group.split(" & "))
        for group in query.split(" | ")
    )


def test_the_loose_filter_keeps_every_fact_holding_enough_terms():
    """The index's filter never drops a fact the exact test would keep, for questions of 1 to
    16 terms, terms too short for the index and terms sharing a first piece among them, and
    it stays within MAX_PIECE_GROUPS ANDs of two pieces or more once there are many terms."""
    import itertools
    import random

    from cli_org.recall.facts_arm import MAX_PIECE_GROUPS, _loose_pieces

    rng = random.Random(38)
    for n in range(1, 17):
        for _ in range(20):
            words = [[rng.choice(["ab", "deploy", "relay", "cache", f"w{i}x", f"term{i}"])] for i in range(n)]
            need = needed(n)
            query = _loose_pieces(words, need)
            for held in itertools.islice(
                (set(rng.sample(range(n), k)) for k in range(need, n + 1) for _ in range(5)), 200
            ):
                assert _holds(query, {words[i][0] for i in held}), (words, need, held, query)
            if query and n >= 10 and len({w[0] for w in words if len(w[0]) >= 3}) >= 10:
                groups = query.split(" | ")
                assert len(groups) <= MAX_PIECE_GROUPS and all(" & " in g for g in groups), query


FACTS = 5000  # past BACKGROUND_SAMPLE * 2, so the background is sampled


def _many_facts(org, vectors: bool) -> None:
    """FACTS current facts by `bot` (set-based, with the write-time checks switched off for the
    load: they measure nothing here) and, when asked, a random unit vector each computed by
    their author."""
    with org.admin() as admin:
        admin.execute("ALTER TABLE memory_facts DISABLE TRIGGER USER")
        if vectors:  # built once after the load, as benchmarks/scale.py does: faster than row by row
            admin.execute("DROP INDEX memory_fact_vectors_embedding")
        admin.commit()
    with org.as_agent("bot") as conn:
        conn.execute(
            """INSERT INTO memory_facts (subject, claim, source, project)
               SELECT 'topic ' || mod(i, 97),
                      'claim ' || i || ' about ' || (ARRAY['deploys', 'ports', 'queues', 'caches',
                      'backups', 'replicas'])[1 + mod(i, 6)] || ' and item' || mod(i * 7919, 10007),
                      'docs/' || i || '.md', (ARRAY[NULL, 'alpha', 'beta'])[1 + mod(i, 3)]
               FROM generate_series(1, %s) AS i""",
            (FACTS,),
        )
        if vectors:
            conn.execute(
                """INSERT INTO memory_fact_vectors (fact_id, model, embedding)
                   SELECT f.id, %s, (SELECT l2_normalize(array_agg(random() - 0.5)::vector)
                                     FROM generate_series(1, 384) WHERE f.id > 0)
                   FROM memory_facts f""",
                (HashEmbedder().name,),
            )
        conn.commit()
    with org.admin() as admin:
        admin.execute("ALTER TABLE memory_facts ENABLE TRIGGER USER")
        if vectors:
            admin.execute(
                "CREATE INDEX memory_fact_vectors_embedding ON memory_fact_vectors"
                " USING hnsw (embedding vector_cosine_ops)"
            )
        admin.commit()
        # What autovacuum does on a live server: a GIN index filled row by row knows its
        # size only after a VACUUM, and the planner prices it blind before.
        admin.autocommit = True
        admin.execute("VACUUM ANALYZE memory_facts")
        if vectors:
            admin.execute("VACUUM ANALYZE memory_fact_vectors")


class Recorder:
    """Wraps a connection's execute to keep every statement (and its parameters) that
    reads memory_facts, for EXPLAIN afterwards."""

    def __init__(self, conn):
        self.conn, self.seen, self._execute = conn, [], conn.execute
        conn.execute = self.execute

    def execute(self, query, params=None, **kw):
        code = [line for line in str(query).splitlines() if line.strip() and not line.lstrip().startswith("--")]
        if "memory_facts" in str(query) and code and code[0].lstrip().upper().startswith(("SELECT", "WITH")):
            self.seen.append((query, params))
        return self._execute(query, params, **kw)

    def plans(self) -> list[str]:
        """Each statement's plan with sequential scans priced out: a few thousand rows fit
        in a few pages, and the planner then rightly reads them all, but a statement that
        has no index path still shows a Seq Scan (as the strict pass's `OR strpos` did)."""
        out = []
        self._execute("SET LOCAL enable_seqscan = off")
        for query, params in self.seen:
            rows = self._execute("EXPLAIN " + query, params).fetchall()
            out.append("\n".join(next(iter(r.values())) for r in rows))
        self.conn.rollback()
        return out


def _names(plans: list[str]) -> str:
    return "\n---\n".join(plans)


@pytest.mark.parametrize(
    "query",
    [
        "postgres replica",  # strict: full text finds nothing, the substring test is asked
        "item1234 deploys",  # strict: full text
        "queue cache ports deploy replica",  # loose: half the terms start a word
        "tem4321",  # a substring inside a word ("item4321")
    ],
)
def test_the_lexical_passes_read_an_index_not_every_fact(org, query, monkeypatch):
    """Each tier of a pass reads a bounded part: the newest facts by an id range, the older
    ones through the full-text or the piece index (a first tier small enough here that both
    are planned over FACTS facts, and a cap high enough that both run)."""
    from cli_org.recall import facts_arm

    monkeypatch.setattr(facts_arm, "TIER_NEWEST", 200)
    monkeypatch.setattr(facts_arm, "RANK_CAP", 10 * FACTS)
    _many_facts(org, vectors=False)
    with org.as_agent("lead") as conn:
        rec = Recorder(conn)
        recall_facts(conn, query, project="alpha", limit=8)
        plans = rec.plans()
    assert plans, "no statement read memory_facts"
    text = _names(plans)
    assert "Seq Scan on memory_facts" not in text, text
    passes = [p for p in plans if "Function Scan on unnest t " not in p]  # not the pieces' (the newest id)
    assert passes, text
    for plan in passes:  # each pass reads the full-text or the piece index, not all current facts
        assert "memory_facts_pieces" in plan or "memory_facts_search" in plan, plan
        assert "memory_facts_pkey" in plan, plan  # the newest tier: an id range


@pytest.mark.vectors
def test_the_semantic_pass_reads_the_graph_and_a_sample(org):
    _many_facts(org, vectors=True)
    with org.as_agent("lead") as conn:
        rec = Recorder(conn)
        # No lexical hit: the semantic pass runs (and finds every vector in place).
        recall_facts(conn, "zebra xylophone", project=None, limit=8, embedder=HashEmbedder())
        # every statement reads an index or a sample (recall no longer checks for facts
        # without a vector: they get theirs when written)
        plans = rec.plans()
    text = _names(plans)
    assert any("memory_fact_vectors_embedding" in p for p in plans), text  # candidates: the HNSW graph
    assert any("Sample Scan on memory_facts" in p for p in plans), text  # the background: a sample
    assert "Seq Scan on memory_facts " not in text.replace("\n", " \n"), text


@pytest.mark.vectors
def test_the_sampled_background_keeps_the_trust_rule(org):
    """A hostile member's forged vectors (equal to the query's, on facts it did not write)
    count neither among the candidates nor in the sampled background of another agent."""
    _many_facts(org, vectors=True)
    embedder = HashEmbedder()
    query = "zebra xylophone"

    def nearest():
        with org.as_agent("lead") as conn:
            return [
                (row["id"], round(sim, 6), None if z is None else round(z, 6))
                for row, sim, z in _nearest(conn, query, None, 8, embedder, FACT_SHAPING)
            ]

    before = nearest()
    assert len(before) == 16 and all(z is not None for _, _, z in before)
    with org.as_agent("other") as conn:
        conn.execute(
            "INSERT INTO memory_fact_vectors (fact_id, model, embedding) "
            "SELECT id, %s, %s::vector FROM memory_facts ORDER BY id LIMIT 500",
            (embedder.name, vector_literal(embedder.embed([query])[0])),
        )
        conn.commit()
    after = nearest()
    # Nothing the forger wrote scores: no fact comes back at the magnet's similarity, every
    # rank is at least as close as before (the graph is approximate: when the crowd runs it
    # dry, the pass reads every fact and may find closer ones), and the background is the
    # same (a fact found both times has the same z).
    assert len(after) == 16 and max(sim for _, sim, _ in after) < 0.9
    assert all(a[1] >= b[1] - 1e-9 for a, b in zip(after, before, strict=True))
    zs = {fid: z for fid, _, z in before}
    assert all(z == zs[fid] for fid, _, z in after if fid in zs)


def test_a_common_word_ranks_only_its_newest_matches(org):
    """Past RANK_CAP matches a lexical pass ranks only the newest of them (its first tier
    finds them and the others never run): older facts that hold the word more often are not
    read."""
    with org.admin() as admin:
        admin.execute("ALTER TABLE memory_facts DISABLE TRIGGER USER")  # the load only, as above
        admin.commit()
    with org.as_agent("bot") as conn:
        old = [facts.remember(conn, f"old {i}", "ubiquity ubiquity ubiquity", source="d.md").id for i in range(3)]
        conn.execute(
            "INSERT INTO memory_facts (subject, claim, source)"
            " SELECT 'new ' || i, 'ubiquity once, item ' || i, 'd.md' FROM generate_series(1, %s) i",
            (RANK_CAP,),
        )
        conn.commit()
    with org.admin() as admin:
        admin.execute("ALTER TABLE memory_facts ENABLE TRIGGER USER")
        admin.commit()
    with org.as_agent("bot") as conn:
        hits = _lexical(conn, "ubiquity", project=None, limit=8)
        rows = conn.execute(sql("recall.facts_strict"), {**_strict_params("ubiquity"), "cap": 2000})
        uncapped = [r["id"] for r in rows]
    assert len(hits) == 8 and all(h.match == "strict" for h in hits)
    assert not {h.fact.id for h in hits} & set(old)  # the older, better-ranked ones were never read
    assert set(old) <= set(uncapped[:3])  # ranking every match would have put them first


def _strict_params(query: str) -> dict:
    return {"query": query, "project": None, "limit": 16, "substring": True, "pieces": None, "newest": 0}
