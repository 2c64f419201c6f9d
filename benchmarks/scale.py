"""How far one server goes: latency and index build time at 10k, 100k and 1M facts and
vault chunks (issue 14, part 4).

Each size gets its own database, loaded in bulk: facts and chunk texts are generated from
the TIL vault's vocabulary with Zipf-like word frequencies and sent with COPY; tsvectors,
postings and random unit vectors (384 dimensions, one per chunk and one per fact) are
computed by the server in set-based statements. The GIN and HNSW indexes are dropped
before the load and built afterwards, each timed. Queries are 1-8 Zipf-drawn words,
embedded with the real ONNX query model; every figure is in-process and warm (--warm
queries are run untimed first), as the agent `scale-bot` (row-level security applies).

    python -m benchmarks.scale --facts 10000 --chunks 10000 [--queries 100]
    python -m benchmarks.scale --facts 10000 --chunks 1000000 --nn 50 --build-mem 4GB
                                               # + HNSW recall@10 against exact search
    python -m benchmarks.scale --facts 100000 --chunks 100000 --real-vectors DIR --nn 50
                        # one-sentence claims and chunks with the real model's vectors (cached in DIR)
    python -m benchmarks.scale --facts 1000000 --context-only   # the context block alone
    python -m benchmarks.scale --plot          # docs/scale.png from benchmarks/scale-results.json

Issue 38's growth table: load each size once, then time each code on it (--label names it;
run from each checkout), then print the table:

    python -m benchmarks.scale --facts 1000000 --chunks 100000 --vectors 100000 \
        --real-vectors DIR --load-only
    python -m benchmarks.scale --facts 1000000 --chunks 100000 --vectors 100000 \
        --real-vectors DIR --no-load --queries 40 --mcp 40 \
        --calls "fact arm,recall,hybrid search,context" --label after
    python -m benchmarks.scale --growth

Results are appended to benchmarks/scale-results.json (one object per run).
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from cli_org.checks.rules import KINDS
from cli_org.db.connect import connect
from cli_org.recall.answer import recall
from cli_org.recall.facts_arm import recall_facts
from cli_org.session.context import build_context
from cli_org.store.agents import add_agent
from cli_org.vault.embedders import MODEL_NAME, index_embedder, query_embedder
from cli_org.vault.search import search

from .common import ROOT, median, percentile
from .common import bench_settings as _bench_settings
from .synthetic import vocabulary

RESULTS = ROOT / "benchmarks" / "scale-results.json"
AGENT = "scale-bot"
PROJECTS = ("alpha", "beta", "gamma", "delta")
CHUNKS_PER_NOTE = 4  # as the synthetic vault: four sections per note
BATCH = 50_000  # rows generated and sent per COPY
# --real-vectors: one-sentence texts embedded with the indexing model, made and cached in
# blocks (a run of any size reuses the blocks an earlier run embedded).
SENTENCE_BLOCK = 10_000
RANDOM_VECTOR = "(SELECT l2_normalize(array_agg(random() - 0.5)::vector) FROM generate_series(1, 384) WHERE {ref} > 0)"


class Words:
    """Zipf-drawn word sequences, vectorised (numpy), reproducible from the seed."""

    def __init__(self, seed: int):
        words, weights = vocabulary()
        self.words = np.array(words, dtype=object)
        p = np.array(weights, dtype=float)
        self.p = p / p.sum()
        self.rng = np.random.default_rng(seed)

    def texts(self, count: int, low: int, high: int) -> list[str]:
        lengths = self.rng.integers(low, high + 1, size=count)
        flat = self.words[self.rng.choice(len(self.words), size=int(lengths.sum()), p=self.p)]
        out, at = [], 0
        for n in lengths:
            out.append(" ".join(flat[at : at + n]))
            at += n
        return out


class Sentences:
    """`n` one-sentence texts (8-16 Zipf-drawn words and a full stop) and their vectors from
    the library's indexing embedder, cached as one .npy per block of SENTENCE_BLOCK under
    `cache`: the same texts serve as the facts' claims and the vault chunks' contents."""

    def __init__(self, n: int, cache: Path, settings=None):
        self.texts: list[str] = []
        blocks: list[np.ndarray] = []
        cache.mkdir(parents=True, exist_ok=True)
        embedder = None
        started, embedded = time.perf_counter(), 0
        for block in range(-(-n // SENTENCE_BLOCK)):
            texts = [t + "." for t in Words(seed=1000 + block).texts(SENTENCE_BLOCK, 8, 16)]
            path = cache / f"sentences-{block}.npy"
            if not path.exists():
                if embedder is None:
                    embedder = index_embedder(settings)
                vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
                np.save(path, vectors)
                embedded += len(texts)
                rate = embedded / (time.perf_counter() - started)
                print(f"embedded block {block}: {rate:.0f} sentences/s", file=sys.stderr, flush=True)
            self.texts += texts
            blocks.append(np.load(path))
        if embedder is not None:
            embedder.close()
        self.texts = self.texts[:n]
        self.vectors = np.concatenate(blocks)[:n]
        self.rate = round(embedded / (time.perf_counter() - started), 1) if embedded else None

    def literal(self, i: int) -> str:
        return "[" + ",".join(f"{x:.6g}" for x in self.vectors[i]) + "]"


def _copy(conn, statement: str, rows) -> None:
    """COPY rows (tuples of str) in text format; tabs, newlines and backslashes never occur."""
    buf = io.StringIO()
    for row in rows:
        buf.write("\t".join("\\N" if v is None else str(v) for v in row))
        buf.write("\n")
    with conn.cursor() as cur, cur.copy(statement) as copy:
        copy.write(buf.getvalue())


def _timed(conn, statement: str) -> float:
    started = time.perf_counter()
    conn.execute(statement)
    conn.commit()
    return round(time.perf_counter() - started, 1)


def load_facts(
    conn,
    n: int,
    words: Words,
    timings: dict,
    real: Sentences | None = None,
    arm: bool = True,
    vectors: int | None = None,
) -> None:
    """n current facts by the bench agent, a third org-wide and the rest spread over four
    projects, the newest `vectors` (default: all) with a random unit vector each (computed by
    the author, so recall trusts it); with `real`, the newest `vectors` facts' claims are
    sentences 0, 1, ... and their vectors those sentences'. `arm` False (--context-only): no
    vectors and none of the fact arm's indexes, what the context block never reads."""
    with_vectors = n if vectors is None else min(n, vectors)
    plain = n - with_vectors  # the oldest facts: no vector, made-up words
    conn.execute("DROP INDEX IF EXISTS memory_facts_search")
    conn.execute("DROP INDEX IF EXISTS memory_facts_no_duplicate")
    conn.execute("DROP INDEX IF EXISTS memory_facts_current")
    conn.execute("DROP INDEX IF EXISTS memory_facts_pieces")
    conn.execute("DROP INDEX IF EXISTS memory_fact_vectors_embedding")
    conn.commit()
    started = time.perf_counter()
    # Synthetic rows skip the write-time checks (triggers) and the foreign-key checks: they
    # measure the engine's storage and lookup, not the checks, which `remember` measures.
    conn.execute("SET session_replication_role = replica")
    for at in range(0, n, BATCH):
        size = min(BATCH, n - at)
        subjects = words.texts(size, 2, 3)
        made = words.texts(size, 10, 30)
        claims = [
            real.texts[at + i - plain] if real and at + i >= plain else f"{made[i]} (item {at + i})"
            for i in range(size)
        ]  # unique claims: the duplicate index holds
        rows = (
            (
                s,
                c,
                f"docs/{at + i}.md",
                AGENT,
                None if (at + i) % 3 == 2 else PROJECTS[(at + i) % 4],
                KINDS[(at + i) % len(KINDS)],
            )
            for i, (s, c) in enumerate(zip(subjects, claims, strict=True))
        )
        _copy(conn, "COPY memory_facts (subject, claim, source, author, project, kind) FROM STDIN", rows)
        conn.commit()
    timings["facts_copy_s"] = round(time.perf_counter() - started, 1)
    started = time.perf_counter()
    if not arm:
        pass
    elif real:  # the facts' ids in the order they were copied: the newest hold the sentences
        ids = [r["id"] for r in conn.execute("SELECT id FROM memory_facts ORDER BY id OFFSET %s", (plain,))]
        _copy(
            conn,
            "COPY memory_fact_vectors (fact_id, model, computed_by, embedding) FROM STDIN",
            ((fid, MODEL_NAME, AGENT, real.literal(i)) for i, fid in enumerate(ids)),
        )
    else:
        conn.execute(
            "INSERT INTO memory_fact_vectors (fact_id, model, computed_by, embedding) "
            f"SELECT f.id, %s, f.author, {RANDOM_VECTOR.format(ref='f.id')} FROM memory_facts f"
            " WHERE f.id > (SELECT max(id) FROM memory_facts) - %s",
            (MODEL_NAME, with_vectors),
        )
    conn.execute("RESET session_replication_role")
    conn.commit()
    timings["fact_vectors_s"] = round(time.perf_counter() - started, 1)
    conn.execute("SET maintenance_work_mem = '1GB'")
    if not arm:
        _vacuum(conn, "memory_facts")
        return
    timings["facts_gin_build_s"] = _timed(conn, "CREATE INDEX memory_facts_search ON memory_facts USING gin (search)")
    timings["facts_btree_build_s"] = round(
        _timed(
            conn,
            "CREATE UNIQUE INDEX memory_facts_no_duplicate"
            " ON memory_facts (subject, md5(claim), coalesce(project, '')) WHERE valid_to IS NULL",
        )
        + _timed(conn, "CREATE INDEX memory_facts_current ON memory_facts (subject) WHERE valid_to IS NULL"),
        1,
    )
    # The fact arm's own indexes (migrations 0020 and 0021): word pieces for the lexical
    # passes, the HNSW graph of fact vectors for the semantic one.
    timings["facts_pieces_build_s"] = _timed(
        conn,
        "CREATE INDEX memory_facts_pieces ON memory_facts USING gin (fact_word_pieces(subject, claim))"
        " WHERE valid_to IS NULL",
    )
    timings["fact_hnsw_build_s"] = _timed(
        conn,
        "CREATE INDEX memory_fact_vectors_embedding ON memory_fact_vectors USING hnsw (embedding vector_cosine_ops)",
    )
    _vacuum(conn, "memory_facts")
    _vacuum(conn, "memory_fact_vectors")


def _vacuum(conn, table: str) -> None:
    """VACUUM ANALYZE, as autovacuum does after a bulk insert: the visibility map lets the
    context block's counts read their indexes alone."""
    conn.commit()
    conn.autocommit = True
    try:
        conn.execute(f"VACUUM (ANALYZE) {table}")
    finally:
        conn.autocommit = False


def load_chunks(
    conn, n: int, words: Words, timings: dict, build_mem: str = "1GB", real: Sentences | None = None
) -> None:
    """n chunks in n/4 notes (four sections each), their postings, term counts and BM25
    statistics as a scan leaves them, and a random unit vector per chunk; with `real`, chunk
    k's content is sentence k and its vector that sentence's."""
    for index in ("vault_chunks_tsv", "vault_chunks_embedding", "vault_chunks_unembedded"):
        conn.execute(f"DROP INDEX IF EXISTS {index}")
    conn.execute(
        "CREATE UNLOGGED TABLE IF NOT EXISTS scale_stage (path text, ord int, heading text, content text, v vector)"
    )
    conn.commit()
    notes = max(1, n // CHUNKS_PER_NOTE)
    started = time.perf_counter()
    per = BATCH // CHUNKS_PER_NOTE
    for at in range(0, notes, per):
        size = min(per, notes - at)
        titles = words.texts(size, 4, 4)
        _copy(
            conn,
            "COPY vault_files (path, title, hash, size, mtime) FROM STDIN",
            (
                (f"topic{(at + i) % 200:03d}/note{at + i}.md", t.title(), f"h{at + i}", 2000, 0)
                for i, t in enumerate(titles)
            ),
        )
        heads = words.texts(size * CHUNKS_PER_NOTE, 2, 2)
        first = at * CHUNKS_PER_NOTE
        bodies = (
            real.texts[first : first + size * CHUNKS_PER_NOTE]
            if real
            else [b + "." for b in words.texts(size * CHUNKS_PER_NOTE, 60, 120)]
        )
        _copy(
            conn,
            "COPY scale_stage (path, ord, heading, content, v) FROM STDIN",
            (
                (
                    f"topic{(at + k // 4) % 200:03d}/note{at + k // 4}.md",
                    k % 4,
                    f"Section {k % 4} {h}",
                    b,
                    real.literal(first + k) if real else None,
                )
                for k, (h, b) in enumerate(zip(heads, bodies, strict=True))
            ),
        )
        conn.commit()
    timings["chunks_copy_s"] = round(time.perf_counter() - started, 1)
    started = time.perf_counter()
    conn.execute(
        "INSERT INTO vault_chunks (file_id, ord, heading, content, hash, tsv, embedding, embed_model) "
        "SELECT f.id, s.ord, s.heading, s.content, md5(s.content), to_tsvector('english', s.content), "
        f"{'s.v' if real else RANDOM_VECTOR.format(ref='f.id + s.ord')}, %s "
        "FROM scale_stage s JOIN vault_files f ON f.path = s.path",
        (MODEL_NAME,),
    )
    conn.execute("DROP TABLE scale_stage")
    conn.commit()
    timings["chunks_tsv_vectors_s"] = round(time.perf_counter() - started, 1)
    started = time.perf_counter()
    # The postings arrive with their three b-tree indexes dropped and the foreign-key
    # trigger off (session_replication_role), and the indexes are built once afterwards:
    # keeping them up row by row was most of the build at 1M chunks (RESULTS.md, "1M vault
    # chunks, measured"). The library's scan still writes postings per batch of notes.
    conn.execute(DROP_POSTINGS_INDEXES)
    conn.execute("SET work_mem = '256MB'")  # the loader's sort and hash of every (note, term)
    conn.execute("SET session_replication_role = replica")
    conn.execute(BULK_POSTINGS)
    conn.execute("RESET session_replication_role")
    conn.commit()
    timings["postings_insert_s"] = round(time.perf_counter() - started, 1)
    built = time.perf_counter()
    conn.execute(f"SET maintenance_work_mem = '{build_mem}'")
    conn.execute(CREATE_POSTINGS_INDEXES)
    conn.commit()
    timings["postings_indexes_s"] = round(time.perf_counter() - built, 1)
    conn.execute("INSERT INTO vault_terms (term, df) SELECT term, count(*) FROM vault_postings GROUP BY term")
    conn.execute(_sql("vault.refresh_stats"))
    conn.execute(_sql("vault.set_meta"), {"key": "embed_model", "value": MODEL_NAME})
    conn.commit()
    timings["postings_s"] = round(time.perf_counter() - started, 1)
    # The builds only (never the server's setting): HNSW over 1M vectors needs more than
    # 1 GB to keep its graph in memory while it builds.
    conn.execute(f"SET maintenance_work_mem = '{build_mem}'")
    timings["chunks_gin_build_s"] = _timed(conn, "CREATE INDEX vault_chunks_tsv ON vault_chunks USING gin (tsv)")
    timings["chunks_hnsw_build_s"] = _timed(
        conn, "CREATE INDEX vault_chunks_embedding ON vault_chunks USING hnsw (embedding vector_cosine_ops)"
    )
    conn.execute("CREATE INDEX vault_chunks_unembedded ON vault_chunks (id) WHERE embedding IS NULL")
    for table in ("vault_files", "vault_chunks", "vault_postings", "vault_terms"):
        conn.execute(f"ANALYZE {table}")
    conn.commit()


# vault.build_postings for every note at once (the scan runs it per batch of notes).
BULK_POSTINGS = """
CREATE TEMP TABLE scale_tf AS
    SELECT c.file_id, t.lexeme AS term, sum(coalesce(array_length(t.positions, 1), 1))::int AS tf
    FROM vault_chunks c, unnest(c.tsv) t GROUP BY 1, 2;
CREATE TEMP TABLE scale_dl AS SELECT file_id, sum(tf)::int AS dl FROM scale_tf GROUP BY 1;
UPDATE vault_files f SET length = d.dl FROM scale_dl d WHERE f.id = d.file_id;
INSERT INTO vault_postings (term, file_id, tf, dl)
    SELECT t.term, t.file_id, t.tf, d.dl FROM scale_tf t JOIN scale_dl d USING (file_id);
DROP TABLE scale_tf, scale_dl;
"""


# The postings' indexes as migrations 0002 and 0006 make them, dropped for the bulk load.
DROP_POSTINGS_INDEXES = """
ALTER TABLE vault_postings DROP CONSTRAINT IF EXISTS vault_postings_pkey;
DROP INDEX IF EXISTS vault_postings_file;
DROP INDEX IF EXISTS vault_postings_by_density;
"""
CREATE_POSTINGS_INDEXES = """
ALTER TABLE vault_postings ADD CONSTRAINT vault_postings_pkey PRIMARY KEY (term, file_id) INCLUDE (tf, dl);
CREATE INDEX vault_postings_file ON vault_postings (file_id);
CREATE INDEX vault_postings_by_density ON vault_postings (term, (tf::real / dl) DESC) INCLUDE (file_id, tf, dl);
"""


def _sql(name: str) -> str:
    from cli_org.db.queries import sql

    return sql(name)


SIZES = """
SELECT c.relname AS name, c.relkind AS kind, pg_total_relation_size(c.oid) AS total, pg_relation_size(c.oid) AS own
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND c.relname IN (
    'memory_facts', 'memory_fact_vectors', 'vault_chunks', 'vault_postings', 'vault_files',
    'memory_facts_search', 'vault_chunks_tsv', 'vault_chunks_embedding', 'vault_postings_pkey',
    'vault_postings_by_density')
"""


def sizes(conn) -> dict:
    out = {}
    for r in conn.execute(SIZES):
        mb = (r["total"] if r["kind"] == "r" else r["own"]) / 2**20
        out[r["name"]] = round(mb, 1)
    out["database_mb"] = round(conn.execute("SELECT pg_database_size(current_database()) AS s").fetchone()["s"] / 2**20)
    conn.rollback()
    return out


WARM = 5  # untimed calls first (--warm): they read the tables and indexes into the cache


def _found(got) -> int:
    """How many hits a call returned (a context block: its lines), so no figure times an empty answer."""
    if isinstance(got, list):
        return len(got)
    if hasattr(got, "hits"):
        return len(got.hits)
    return got.text.count("\n")


def measure(
    settings, queries: list[str], warm: int = WARM, context_only: bool = False, only: list[str] | None = None
) -> dict:
    """p50/p95 in ms of each call, after `warm` untimed calls that read tables and indexes in."""
    embedder, why = query_embedder(settings)
    if embedder is None:
        raise SystemExit(why)
    embedder.embed(["warm up"])
    calls = {
        "fact arm": lambda c, q: recall_facts(
            c, q, project=None, limit=8, embedder=embedder, shaping=settings.fact_shaping
        ),
        "fact arm, lexical": lambda c, q: recall_facts(c, q, project=None, limit=8),
        "hybrid search": lambda c, q: search(c, q, mode="hybrid", limit=10, embedder=embedder),
        "keyword search": lambda c, q: search(c, q, mode="keyword", limit=10),
        "semantic search": lambda c, q: search(c, q, mode="semantic", limit=10, embedder=embedder),
        "recall": lambda c, q: recall(c, q, settings=settings, embedder=embedder),
        "context --for": lambda c, q: build_context(c, settings=settings, for_text=q, embedder=embedder),
        "context": lambda c, q: build_context(c, settings=settings, project=PROJECTS[len(q) % len(PROJECTS)]),
    }
    if context_only:
        calls = {"context": calls["context"]}
    if only:
        calls = {k: v for k, v in calls.items() if k in only}
    out = {}
    with connect(settings, AGENT) as conn:
        for label, call in calls.items():
            errors = 0
            for q in queries[:warm]:
                try:
                    call(conn, q)
                except Exception:  # noqa: BLE001 - a timed-out call is a result here
                    errors += 1
            times, found = [], []
            for q in queries:
                started = time.perf_counter()
                try:
                    got = call(conn, q)
                except Exception as exc:  # noqa: BLE001
                    errors += 1
                    print(f"{label}: {type(exc).__name__}: {exc}", file=sys.stderr)
                    continue
                times.append((time.perf_counter() - started) * 1000)
                found.append(_found(got))
            out[label] = {
                "mean_hits": round(sum(found) / len(found), 1) if found else 0,
                "n": len(times),
                "p50_ms": round(median(times), 1) if times else None,
                "p95_ms": round(percentile(times, 0.95), 1) if times else None,
                "errors": errors,
            }
            print(label, out[label], file=sys.stderr, flush=True)
    embedder.close()
    out["context, cold process"] = cold_context(settings)
    print("context, cold process", out["context, cold process"], file=sys.stderr, flush=True)
    return out


COLD_RUNS = 10


def cold_context(settings) -> dict:
    """A new `cli-org context` process per call (`python -m cli_org`, the script's start-up),
    as the SessionStart hook runs it: p50/p95 in ms."""
    import os
    import subprocess

    env = {
        **os.environ,
        "CLI_ORG_DATA_DIR": str(settings.data_dir),
        "CLI_ORG_DATABASE": settings.database_name,
        "ORG_ROOT": settings.root,
        "ORG_AGENT": AGENT,
        "CLI_ORG_WARM": "0",  # a cold process each time, never the warm helper
    }
    times = []
    for i in range(COLD_RUNS + 1):
        args = [sys.executable, "-m", "cli_org", "context", "--project", PROJECTS[i % len(PROJECTS)]]
        started = time.perf_counter()
        subprocess.run(args, env=env, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
        if i:  # the first run reads the tables into the cache
            times.append((time.perf_counter() - started) * 1000)
    return {"n": len(times), "p50_ms": round(median(times), 1), "p95_ms": round(percentile(times, 0.95), 1)}


def run(
    n_facts: int,
    n_chunks: int,
    n_queries: int,
    keep: bool,
    warm: int = WARM,
    load: bool = True,
    build_mem: str = "1GB",
    nn: int = 0,
    real_vectors: Path | None = None,
    context_only: bool = False,
    vectors: int | None = None,
    load_only: bool = False,
    mcp_calls: int = 0,
    only: list[str] | None = None,
    label: str | None = None,
) -> dict:
    if context_only:
        n_chunks = 0
    name = f"scale_f{n_facts}_c{n_chunks}" + ("_real" if real_vectors else "") + ("_context" if context_only else "")
    empty = Path(tempfile.mkdtemp(prefix="scale-root-"))  # no project memory files
    if not load:  # --no-load: measure a database kept by an earlier run (--keep), migrated first
        settings = replace(_bench_settings(name), root=str(empty))
        earlier = [r for r in _saved() if (r["facts"], r["chunks"]) == (n_facts, n_chunks)]
        if not earlier:
            raise SystemExit(f"--no-load: no saved run of {n_facts} facts and {n_chunks} chunks")
        timings = dict(earlier[-1]["load_s"])
        with connect(settings, bounded=False) as admin:
            table_sizes = sizes(admin)
    else:
        settings = replace(_bench_settings(name, fresh=True), root=str(empty))
        index_embedder(settings)  # leaves the ONNX query model
        timings = {}
        words = Words(seed=14)
        fact_sentences = n_facts if vectors is None else min(n_facts, vectors)
        real = Sentences(max(fact_sentences, n_chunks), real_vectors, settings) if real_vectors else None
        if real is not None and real.rate:
            timings["sentences_per_s"] = real.rate
        with connect(settings, bounded=False) as admin:
            add_agent(admin, AGENT)
            admin.commit()
            load_facts(admin, n_facts, words, timings, real, arm=not context_only, vectors=vectors)
            print("facts loaded", timings, file=sys.stderr, flush=True)
            if not context_only:
                load_chunks(admin, n_chunks, words, timings, build_mem, real)
            print("chunks loaded", timings, file=sys.stderr, flush=True)
            table_sizes = sizes(admin)
    if load_only:
        _saved_run(
            {"facts": n_facts, "chunks": n_chunks, "load_s": timings, "sizes_mb": table_sizes, "vectors": vectors,
             "load_only": True, "when": time.strftime("%Y-%m-%d %H:%M")}
        )  # fmt: skip
        return {"loaded": settings.database_name, "load_s": timings, "sizes_mb": table_sizes}
    queries = question_mix(settings, n_queries)
    latency = measure(settings, queries, warm, context_only, only)
    if mcp_calls:
        latency.update(through_mcp(settings, queries, mcp_calls, warm))
    neighbours = nearest_neighbours(settings, Words(seed=16).texts(nn, 1, 8)) if nn else None
    result = {
        "facts": n_facts,
        "chunks": n_chunks,
        "queries": n_queries,
        "warm": warm,
        "load_s": timings,
        "sizes_mb": table_sizes,
        "latency_ms": latency,
        **({"hnsw_recall_at_10": neighbours} if neighbours else {}),
        "when": time.strftime("%Y-%m-%d %H:%M"),
    }
    result["fact_arm_indexed"] = True  # the fact arm's indexes of migrations 0020 and 0021
    if real_vectors:
        result["real_vectors"] = True  # claims and chunk texts: embedded one-sentence texts
    if context_only:
        result["context_only"] = True
    if not load:
        result["reused_database"] = True  # load times and sizes are the earlier run's
    if vectors is not None:
        result["vectors"] = vectors  # only the newest facts have a vector
    if label:
        result["label"] = label
    _saved_run(result)
    if not keep:
        from .common import drop_database

        drop_database(settings)
    return result


def _saved() -> list[dict]:
    return json.loads(RESULTS.read_text()) if RESULTS.exists() else []


def _saved_run(result: dict) -> None:
    RESULTS.write_text(json.dumps([*_saved(), result], indent=1) + "\n")


def question_mix(settings, n: int) -> list[str]:
    """`n` questions in four kinds, in turn (issue 38): short (1-2 words), long (10-16),
    with a number (3-5 words and an item number, as the made-up claims carry), and a
    paraphrase of a stored claim (a fact with a vector: two thirds of its words, shuffled)."""
    words = Words(seed=15)
    rng = np.random.default_rng(18)
    with connect(settings, bounded=False) as conn:
        stored = [
            r["claim"]
            for r in conn.execute(
                "SELECT f.claim FROM memory_facts f JOIN memory_fact_vectors v ON v.fact_id = f.id"
                " ORDER BY md5(f.id::text) LIMIT %s",
                (max(1, n // 4),),
            )
        ]
        top = conn.execute("SELECT coalesce(max(id), 1) AS m FROM memory_facts").fetchone()["m"]
    out: list[str] = []
    for i in range(n):
        kind = i % 4
        if kind == 0:
            out += words.texts(1, 1, 2)
        elif kind == 1:
            out += words.texts(1, 10, 16)
        elif kind == 2:
            out.append(f"{words.texts(1, 3, 5)[0]} item {int(rng.integers(0, top))}")
        elif stored:
            picked = stored[(i // 4) % len(stored)].rstrip(".").split()
            keep = sorted(rng.choice(len(picked), size=max(1, len(picked) * 2 // 3), replace=False))
            phrase = [picked[k] for k in keep]
            rng.shuffle(phrase)
            out.append(" ".join(phrase))
        else:
            out += words.texts(1, 4, 8)
    return out


def through_mcp(settings, queries: list[str], calls: int, warm: int) -> dict:
    """Warm `org_context` and `org_recall` through one `cli-org mcp` server (the SDK's stdio
    client), as the agent: `warm` untimed calls each, then `calls` timed ones (p50/p95 ms)."""
    import os

    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    env = {
        **os.environ,
        "CLI_ORG_DATA_DIR": str(settings.data_dir),
        "CLI_ORG_DATABASE": settings.database_name,
        "ORG_ROOT": settings.root,
        "HF_HUB_OFFLINE": "1",
    }
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "cli_org", "mcp", "--as", AGENT], env=env, cwd=str(ROOT)
    )

    async def session() -> dict:
        out: dict = {}
        with open(os.devnull, "w") as quiet:
            async with stdio_client(params, errlog=quiet) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                for tool, args_of in (
                    ("org_context", lambda i, q: {"project": PROJECTS[i % len(PROJECTS)]}),
                    ("org_recall", lambda i, q: {"question": q}),
                ):
                    times, errors = [], 0
                    for i in range(warm + calls):
                        q = queries[i % len(queries)]
                        started = time.perf_counter()
                        got = await s.call_tool(tool, args_of(i, q))
                        if i >= warm:
                            times.append((time.perf_counter() - started) * 1000)
                        errors += bool(got.is_error)
                    out[f"MCP {tool}"] = {
                        "n": len(times),
                        "p50_ms": round(median(times), 1),
                        "p95_ms": round(percentile(times, 0.95), 1),
                        "errors": errors,
                    }
                    print(f"MCP {tool}", out[f"MCP {tool}"], file=sys.stderr, flush=True)
        return out

    return anyio.run(session)


# Top-10 chunks through the HNSW index, as search.dense asks for them, against exact search.
# The library sets ef_search to max(100, 3 x depth) (vault/search.py; 100 for --limit 10);
# 40 is pgvector's own default.
EF_SEARCH = (40, 100)
# search.dense asks for 3 x depth chunks (90 for --limit 10) and orders them itself (the
# iterative scan's relaxed order); the exact side is the same query without the index.
NN_QUERY = (
    "SELECT id, embedding <=> %(v)s::vector AS d FROM vault_chunks WHERE embedding IS NOT NULL"
    " ORDER BY embedding <=> %(v)s::vector LIMIT 90"
)


def _top10(conn, literal: str) -> tuple[set[int], int]:
    """The ten nearest chunks' ids, and the nearest one's."""
    # Never prepared: a cached generic plan would keep the exact side's scan (or the index)
    # for the other side, whatever enable_indexscan says by then.
    rows = sorted(conn.execute(NN_QUERY, {"v": literal}, prepare=False).fetchall(), key=lambda r: (r["d"], r["id"]))
    return {r["id"] for r in rows[:10]}, rows[0]["id"]


def nearest_neighbours(settings, queries: list[str]) -> dict:
    """Recall@10 of the HNSW index against an exact scan, for three kinds of query vector:
    the query model's embedding of a query (what search sends; the stored vectors are random,
    so every chunk is about as far), a random unit vector, and a stored chunk's vector with
    noise added (a query that has a true near neighbour)."""
    embedder, why = query_embedder(settings)
    if embedder is None:
        raise SystemExit(why)
    rng = np.random.default_rng(17)
    model = [np.asarray(v, dtype=float) for v in embedder.embed(queries)]
    embedder.close()
    few = max(1, len(queries) * 2 // 5)  # the two synthetic kinds: fewer (an exact scan each)
    randoms = [v / np.linalg.norm(v) for v in rng.normal(size=(few, 384))]
    out: dict = {}
    with connect(settings, bounded=False, autocommit=True) as conn:  # each SET LOCAL in its own transaction
        top = conn.execute("SELECT max(id) AS m FROM vault_chunks").fetchone()["m"]
        picks = [int(i) for i in rng.integers(1, top + 1, size=few)]
        stored = [
            np.array(json.loads(r["v"]), dtype=float)
            for r in (
                conn.execute("SELECT embedding::text AS v FROM vault_chunks WHERE id = %s", (i,)).fetchone()
                for i in picks
            )
        ]
        noisy = [
            (v + 0.03 * n) / np.linalg.norm(v + 0.03 * n)
            for v, n in zip(stored, rng.normal(size=(few, 384)), strict=True)
        ]
        plans = []
        for off in (True, False):
            with conn.transaction():
                if off:
                    conn.execute("SET LOCAL enable_indexscan = off")
                plan = conn.execute("EXPLAIN " + NN_QUERY, {"v": "[" + ",".join(["0.05"] * 384) + "]"}).fetchall()
                plans.append(" / ".join(r["QUERY PLAN"].strip().split(" '[")[0] for r in plan[:3]))
        print("exact plan:", plans[0], "| index plan:", plans[1], file=sys.stderr)
        if "vault_chunks_embedding" in plans[0] or "vault_chunks_embedding" not in plans[1]:
            raise SystemExit("the exact side must scan, the index side must use the HNSW index")
        for kind, vectors in (("query model", model), ("random", randoms), ("stored + noise", noisy)):
            scores: dict[str, list[float]] = {f"ef_search {ef}": [] for ef in EF_SEARCH}
            scores["pgvector defaults, LIMIT 10"] = []
            first_found: list[float] = []
            exact_ms, index_ms = [], []
            for v in vectors:
                literal = "[" + ",".join(f"{x:.7g}" for x in v) + "]"
                with conn.transaction():
                    conn.execute("SET LOCAL enable_indexscan = off")  # an exact scan and sort
                    started = time.perf_counter()
                    exact, exact_first = _top10(conn, literal)
                    exact_ms.append((time.perf_counter() - started) * 1000)
                for ef in EF_SEARCH:
                    with conn.transaction():
                        conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef),))
                        conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
                        started = time.perf_counter()
                        found, _ = _top10(conn, literal)
                        index_ms.append((time.perf_counter() - started) * 1000)
                    scores[f"ef_search {ef}"].append(len(found & exact) / 10)
                    if ef == EF_SEARCH[-1]:
                        first_found.append(float(exact_first in found))
                # pgvector as it comes: ef_search 40, no iterative scan, only 10 asked for.
                plain = {
                    r["id"]
                    for r in conn.execute(NN_QUERY.replace("LIMIT 90", "LIMIT 10"), {"v": literal}, prepare=False)
                }
                scores["pgvector defaults, LIMIT 10"].append(len(plain & exact) / 10)
            out[kind] = {
                **{k: {"mean": round(float(np.mean(v)), 3), "min": round(float(min(v)), 2)} for k, v in scores.items()},
                "nearest found (ef_search 100)": round(float(np.mean(first_found)), 3),
                "queries": len(vectors),
                "exact_p50_ms": round(median(exact_ms), 1),
                "index_p50_ms": round(median(index_ms), 1),
            }
            print("recall@10", kind, out[kind], file=sys.stderr, flush=True)
    return out


def plot(out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    saved = json.loads(RESULTS.read_text())

    def latest_of(indexed: bool) -> list[dict]:
        # Runs marked with a "code" note are side runs (a first version, a re-run of main).
        latest: dict[tuple[int, int], dict] = {}
        for r in saved:
            if "code" not in r and "latency_ms" in r and bool(r.get("fact_arm_indexed")) == indexed:
                latest[(r["facts"], r["chunks"])] = r
        return sorted(latest.values(), key=lambda r: (r["facts"], r["chunks"]))

    runs, after = latest_of(False), latest_of(True)  # before / after migrations 0020 and 0021
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    timeout_ms = 30_000  # the default CLI_ORG_STATEMENT_TIMEOUT (limits.py) the runs used

    def p95(r, label):
        # More than 5% of the calls timed out: the p95 is the timeout at least.
        f = r["latency_ms"][label]
        calls = r["queries"] + r.get("warm", WARM)
        if f["p95_ms"] is None:
            return timeout_ms
        return max(timeout_ms, f["p95_ms"]) if f["errors"] > 0.05 * calls else f["p95_ms"]

    for label in ("fact arm", "fact arm, lexical", "recall", "context --for"):
        (line,) = left.plot([r["facts"] for r in runs], [p95(r, label) for r in runs], marker="o", label=f"{label} p95")
        if after:
            left.plot(
                [r["facts"] for r in after],
                [p95(r, label) for r in after],
                marker="^",
                linestyle="--",
                color=line.get_color(),
                label=f"{label} p95, index-backed",
            )
    left.axhline(timeout_ms, color="grey", linestyle="--", linewidth=1)
    left.text(runs[0]["facts"], timeout_ms * 1.1, "statement timeout (30 s)", fontsize=7, color="grey")
    left.set(
        xscale="log", yscale="log", xlabel="facts (chunks for hybrid search)", ylabel="ms", title="Latency, p95, warm"
    )
    hs = sorted((r for r in runs if r["latency_ms"]["hybrid search"]["p95_ms"] is not None), key=lambda r: r["chunks"])
    left.plot(  # points only: runs of one chunk count differ in their facts, and in the load
        [r["chunks"] for r in hs],
        [r["latency_ms"]["hybrid search"]["p95_ms"] for r in hs],
        marker="s",
        linestyle="none",
        label="hybrid search p95 (by chunks)",
    )
    left.legend(fontsize=8)
    left.grid(True, which="both", alpha=0.3)
    for key, label in (
        ("chunks_hnsw_build_s", "HNSW build (chunks)"),
        ("chunks_gin_build_s", "GIN build (chunks)"),
        ("facts_gin_build_s", "GIN build (facts)"),
        ("facts_pieces_build_s", "word-piece GIN build (facts)"),
        ("fact_hnsw_build_s", "HNSW build (fact vectors)"),
    ):
        # One point per size: the index-backed run's where there is one.
        by_rows = {
            r["chunks"] if "chunks" in key else r["facts"]: r["load_s"][key] for r in runs + after if key in r["load_s"]
        }
        points = sorted(by_rows.items())
        right.plot([x for x, _ in points], [y for _, y in points], marker="o", label=label)
    right.set(xscale="log", yscale="log", xlabel="rows", ylabel="s", title="Index build time")
    right.legend(fontsize=8)
    right.grid(True, which="both", alpha=0.3)
    fig.suptitle("cli-org on one PostgreSQL: 2 shared, loaded cores (see benchmarks/RESULTS.md)", fontsize=9)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    print(out)


CALLS = ("fact arm", "fact arm, lexical", "hybrid search", "recall", "context --for")


def table() -> str:
    """The RESULTS.md tables (markdown) from the saved runs, the latest run of each size."""
    latest: dict[tuple[int, int], dict] = {}
    for r in json.loads(RESULTS.read_text()):
        if "latency_ms" in r:  # --load-only runs measured nothing
            latest[(r["facts"], r["chunks"])] = r
    runs = sorted(latest.values(), key=lambda r: (r["facts"], r["chunks"]))

    def cell(r, label):
        f = r["latency_ms"].get(label)
        if not f:
            return "-"
        calls = r["queries"] + r.get("warm", WARM)
        if f["p50_ms"] is None:
            return f"all {calls} timed out"
        out = f"{f['p50_ms']:g} / {f['p95_ms']:g}"
        return out + (f" ({f['errors']} of {calls} timed out)" if f["errors"] else "")

    lines = [
        "| facts | chunks | queries | " + " | ".join(f"{c} p50 / p95 ms" for c in CALLS) + " |",
        "| ---: | ---: | ---: |" + " --- |" * len(CALLS),
    ]
    for r in runs:
        lines.append(
            f"| {r['facts']:,} | {r['chunks']:,} | {r['queries']} | " + " | ".join(cell(r, c) for c in CALLS) + " |"
        )
    lines += [
        "",
        "| facts | chunks | facts COPY s | fact vectors s | facts GIN s | fact pieces GIN s | fact HNSW s "
        "| chunks COPY s | tsvector + vectors s | postings s | chunks GIN s | chunks HNSW s | facts MB "
        "| fact vectors MB | chunks MB | HNSW MB | chunks GIN MB | postings MB | database MB |",
        "|" + " ---: |" * 19,
    ]
    for r in runs:
        t, z = r["load_s"], r["sizes_mb"]
        lines.append(
            f"| {r['facts']:,} | {r['chunks']:,} | "
            + " | ".join(
                f"{t[k]:g}" if k in t else "-"  # runs before migrations 0020/0021 built no fact-arm index
                for k in (
                    "facts_copy_s",
                    "fact_vectors_s",
                    "facts_gin_build_s",
                    "facts_pieces_build_s",
                    "fact_hnsw_build_s",
                    "chunks_copy_s",
                    "chunks_tsv_vectors_s",
                    "postings_s",
                    "chunks_gin_build_s",
                    "chunks_hnsw_build_s",
                )
            )
            + " | "
            + " | ".join(
                f"{z.get(k, 0):g}"
                for k in (
                    "memory_facts",
                    "memory_fact_vectors",
                    "vault_chunks",
                    "vault_chunks_embedding",
                    "vault_chunks_tsv",
                    "vault_postings",
                    "database_mb",
                )
            )
            + " |"
        )
    return "\n".join(lines)


GROWTH = (
    "context",
    "MCP org_context",
    "context, cold process",
    "fact arm",
    "recall",
    "MCP org_recall",
    "hybrid search",
)


def growth() -> str:
    """The growth table (issue 38): per size and labelled run (the latest of each), p50 / p95
    ms of each call in GROWTH, warm unless named cold."""
    latest: dict[tuple[int, int, str], dict] = {}
    for r in _saved():
        if "latency_ms" in r and r.get("label"):
            latest[(r["facts"], r["chunks"], r["label"])] = r
    lines = [
        "| facts / chunks | code | " + " | ".join(GROWTH) + " |",
        "| --- | --- |" + " ---: |" * len(GROWTH),
    ]
    for (facts, chunks, label), r in sorted(latest.items()):
        cells = []
        for call in GROWTH:
            f = r["latency_ms"].get(call)
            if not f or f.get("p50_ms") is None:
                cells.append("-")
                continue
            errors = f.get("errors", 0)
            cells.append(f"{f['p50_ms']:g} / {f['p95_ms']:g}" + (f" ({errors} failed)" if errors else ""))
        lines.append(f"| {facts:,} / {chunks:,} | {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--warm", type=int, default=WARM, help="untimed queries first")
    parser.add_argument("--build-mem", default="1GB", help="maintenance_work_mem for the index builds only")
    parser.add_argument("--nn", type=int, default=0, help="queries for HNSW recall@10 against exact search")
    parser.add_argument("--keep", action="store_true", help="keep the database (default: drop it when done)")
    parser.add_argument(
        "--no-load", action="store_true", help="measure the database an earlier --keep run left (implies --keep)"
    )
    parser.add_argument(
        "--real-vectors",
        type=Path,
        metavar="DIR",
        help="claims and chunk texts are one-sentence texts embedded by the indexing model, cached in DIR",
    )
    parser.add_argument(
        "--context-only", action="store_true", help="facts without vectors or arm indexes; time the context block only"
    )
    parser.add_argument(
        "--vectors", type=int, metavar="N", help="only the newest N facts get a vector (default: every fact)"
    )
    parser.add_argument("--load-only", action="store_true", help="load and keep the database; measure nothing")
    parser.add_argument(
        "--mcp",
        type=int,
        default=0,
        metavar="CALLS",
        help="also time warm org_context and org_recall through cli-org mcp",
    )
    parser.add_argument(
        "--calls", help="a comma-separated choice of the calls to time (default: all), e.g. 'fact arm,context'"
    )
    parser.add_argument("--label", help="name the run (the code it measured), for --growth")
    parser.add_argument(
        "--growth", action="store_true", help="only print the growth table of the labelled runs (issue 38)"
    )
    parser.add_argument("--plot", action="store_true", help="only draw docs/scale.png from the saved results")
    parser.add_argument("--table", action="store_true", help="only print the RESULTS.md tables")
    args = parser.parse_args()
    if args.plot:
        plot(ROOT / "docs" / "scale.png")
        return
    if args.table:
        print(table())
        return
    if args.growth:
        print(growth())
        return
    keep = args.keep or args.no_load or args.load_only
    result = run(
        args.facts,
        args.chunks,
        args.queries,
        keep,
        args.warm,
        not args.no_load,
        args.build_mem,
        args.nn,
        args.real_vectors,
        args.context_only,
        args.vectors,
        args.load_only,
        args.mcp,
        args.calls.split(",") if args.calls else None,
        args.label,
    )
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
