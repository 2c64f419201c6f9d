"""Keyword (BM25), semantic and hybrid ordering on tiny vaults where the answer is known."""

import math
import re
from pathlib import Path

import numpy as np
import pytest

from cli_org.db.connect import connect
from cli_org.db.migrate import NO_VECTORS
from cli_org.errors import InputError
from cli_org.vault.embed import embed_pending
from cli_org.vault.scan import scan
from cli_org.vault.search import prefix_pattern, search
from tests.fakes import HashEmbedder

pytestmark = pytest.mark.slow

NOTES = {
    "git/squash.md": "# Squash commits\n\nCombine commits with an interactive rebase and squash.\n",
    "git/rebase.md": "# Rebase onto main\n\nRebase rewrites commits; rebase often, rebase early.\n",
    "git/log.md": "# Pretty log\n\nShow the commit graph with log --graph.\n",
    "postgres/index.md": "# Partial indexes\n\nIndex only the rows a query needs.\n",
    "postgres/vacuum.md": "# Vacuum\n\nVacuum reclaims space held by dead rows.\n",
    "CURRENT/today.md": "# Today\n\nSquash the release commits today.\n",
}


def make_vault(root: Path, notes: dict[str, str]) -> Path:
    for rel, text in notes.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.fixture
def conn(org, tmp_path):
    with connect(org.settings) as c:
        scan(c, make_vault(tmp_path / "v", NOTES))
        yield c


def paths(result):
    return [h.path for h in result.hits]


def test_bm25_prefers_more_occurrences_and_stems(conn):
    result = search(conn, "rebasing", mode="keyword")
    assert result.used == "keyword" and paths(result)[0] == "git/rebase.md"  # "rebase" x4 beats x1
    assert paths(result) == ["git/rebase.md", "git/squash.md"]
    hit = result.hits[0]
    assert hit.keyword_rank == 1 and hit.semantic_score is None and hit.matched_terms == 1


def test_bm25_rare_term_outweighs_common_term(conn):
    # "commits" is in four notes, "graph" in one: the note with the rare word wins.
    assert paths(search(conn, "commits graph", mode="keyword"))[0] == "git/log.md"


def test_hits_carry_their_shared_words_and_the_query_idfs(conn):
    # Recall weighs keyword support by rarity with these (issue 13).
    hits = {h.path: h for h in search(conn, "commits graph zzqx", mode="keyword").hits}
    log = hits["git/log.md"]
    assert "graph" in log.matched_words and len(log.matched_words) == log.matched_terms
    assert set(log.term_idf) == {"commit", "graph", "zzqx"}  # a word no note holds has an idf too
    assert log.term_idf["zzqx"] > log.term_idf["graph"] > log.term_idf["commit"]
    others = [h for p, h in hits.items() if p != "git/log.md"]
    assert others and all("graph" not in h.matched_words for h in others)


def test_one_hit_per_note_and_exclusions(conn):
    result = search(conn, "squash commits", mode="keyword", private=True)
    assert len(paths(result)) == len(set(paths(result)))
    assert "CURRENT/today.md" in paths(result)
    # Private notes show only when asked for (by the admin here).
    assert "CURRENT/today.md" not in paths(search(conn, "squash commits", mode="keyword"))
    assert "CURRENT/today.md" not in paths(
        search(conn, "squash commits", mode="keyword", private=True, exclude=(prefix_pattern("CURRENT/"),))
    )
    # A prefix is literal: '_' and '%' in it are not wildcards.
    assert "CURRENT/today.md" in paths(
        search(conn, "squash commits", mode="keyword", private=True, exclude=(prefix_pattern("CURR_NT/"),))
    )


def test_limit(conn):
    assert len(search(conn, "commits rows", mode="keyword", limit=2).hits) == 2


PUBLIC = sorted(path for path in NOTES if not path.startswith("CURRENT/"))


@pytest.fixture
def embedded(conn, server):
    """The same vault with a vector for every chunk, so semantic and hybrid really run."""
    if not server.vectors:
        pytest.skip("the test server has no pgvector (team server): keyword fallback is tested instead")
    embed_pending(conn, HashEmbedder())
    return conn


# Queries that hold no word of the vault: operators, quotes, symbols, stop words, a word of
# the maximum length, the maximum number of exclusions, emoji, invisible characters, LIKE
# and tsquery syntax, SQL keywords.
NO_VAULT_WORD = [
    "",
    "   ",
    "the and of",
    "!:*&|()",
    "'\"",
    "a & b | !c",
    "x" * 1000,
    " ".join(f"-w{i}" for i in range(64)),
    "🚀🔥",
    "zero\u200bwidth \u202e",
    "<script>",
    "\\",
    "%_%",
    "(((",
    "NULL",
]


@pytest.mark.parametrize("query", NO_VAULT_WORD)
@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
def test_hostile_queries_without_a_vault_word(embedded, query, mode):
    if not query.strip():  # a blank query is refused, as on every face (limits.check_query)
        with pytest.raises(InputError, match="^the query is empty"):
            search(embedded, query, mode=mode, embedder=HashEmbedder())
        return
    result = search(embedded, query, mode=mode, embedder=HashEmbedder())
    assert result.used == mode and result.notice is None
    if mode == "keyword":
        # Nothing to match: BM25 finds no note.
        assert result.hits == []
        return
    # Meaning has no floor: every public note comes back, best first, never the private one.
    assert sorted(paths(result)) == PUBLIC
    scores = [h.semantic_score for h in result.hits]
    assert scores == sorted(scores, reverse=True)
    if mode == "hybrid":
        # With no keyword evidence the keyword weight is 0: hybrid is the semantic ranking.
        assert all(h.keyword_rank is None and h.matched_terms == 0 for h in result.hits)
        semantic = search(embedded, query, mode="semantic", embedder=HashEmbedder())
        assert paths(result) == paths(semantic)


# A vault word wrapped in operators, quotes, symbols and SQL keywords is still that word.
WITH_VACUUM = [
    "vacuum!:*&|()",
    "'vacuum'",
    "(((vacuum",
    "🚀vacuum🔥",
    "NULL vacuum",
    "vacuum\\",
    "\u200bvacuum",
    "vacuum%",
]


@pytest.mark.parametrize("query", WITH_VACUUM)
@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
def test_hostile_text_around_a_vault_word_finds_its_note_first(embedded, query, mode):
    result = search(embedded, query, mode=mode, embedder=HashEmbedder())
    assert result.used == mode and paths(result)[0] == "postgres/vacuum.md"
    if mode == "keyword":
        assert paths(result) == ["postgres/vacuum.md"]
    else:
        assert result.hits[0].semantic_score > max(h.semantic_score for h in result.hits[1:])
    if mode == "hybrid":
        assert result.hits[0].keyword_rank == 1 and all(h.keyword_rank is None for h in result.hits[1:])


@pytest.mark.parametrize("query", ["vac%", "%acuum", "vacuu_", "vac:*", "vacu*", "vac.*"])
def test_wildcards_and_prefix_operators_are_literal(conn, query):
    # "%" and "_" are not LIKE wildcards, ":*" and "*" not prefix searches: a piece of a word
    # finds nothing, while the whole word finds its note.
    assert search(conn, query, mode="keyword").hits == []
    assert paths(search(conn, "vacuum", mode="keyword")) == ["postgres/vacuum.md"]


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
@pytest.mark.parametrize(
    "query,reason",
    [
        ("x" * 1001, "the query is 1001 characters; ask in at most 1000"),
        (" ".join(f"-zz{i}" for i in range(65)), "the query has 65 words; ask in at most 64"),
        ("vacuum " * 65, "the query has 65 words; ask in at most 64"),
    ],
)
def test_oversized_queries_are_refused_with_the_bound(conn, query, reason, mode):
    with pytest.raises(InputError, match=f"^{reason}$"):
        search(conn, query, mode=mode, embedder=HashEmbedder())


def test_the_bounds_themselves_are_accepted(conn):
    assert paths(search(conn, " ".join(["vacuum"] * 64), mode="keyword")) == ["postgres/vacuum.md"]
    assert search(conn, "x" * 1000, mode="keyword").hits == []


def test_bad_mode(conn):
    with pytest.raises(InputError, match="^mode must be one of keyword, semantic, hybrid$"):
        search(conn, "x", mode="fuzzy")


def test_semantic_and_hybrid_without_vectors_fall_back(conn, server):
    # No vectors yet; on a server without pgvector, none possible (docs/operations.md, Team server).
    why = "no embeddings yet" if server.vectors else NO_VECTORS
    for mode in ("semantic", "hybrid"):
        result = search(conn, "vacuum", mode=mode, embedder=HashEmbedder())
        assert result.used == "keyword" and why in result.notice
        assert paths(result) == ["postgres/vacuum.md"]


@pytest.mark.vectors
def test_semantic_ordering_and_hybrid_fusion(conn):
    # The embedder treats "merge" as "squash", which BM25 cannot know.
    embedder = HashEmbedder({"merge": "squash", "merging": "squash"})
    summary = embed_pending(conn, embedder)
    assert summary.embedded == summary.total == 6
    semantic = search(conn, "merging commits", mode="semantic", embedder=embedder)
    assert semantic.used == "semantic" and paths(semantic)[0] == "git/squash.md"
    assert semantic.hits[0].semantic_score > semantic.hits[-1].semantic_score
    hybrid = search(conn, "merging commits", mode="hybrid", embedder=embedder)
    top = hybrid.hits[0]
    assert top.path == "git/squash.md" and top.keyword_rank and top.semantic_rank
    # The notes only the vector side found (no word of the query) still appear, and below
    # every note both sides found: they share no word and their vectors are no closer.
    assert sorted(paths(hybrid)) == PUBLIC
    vector_only = [h.path for h in hybrid.hits if h.keyword_rank is None]
    assert sorted(vector_only) == ["postgres/index.md", "postgres/vacuum.md"]
    assert paths(hybrid)[-2:] == vector_only


class DialEmbedder:
    """Cosines set by hand: a chunk holding the word `cosNN` is at cosine NN/100 to any
    query, which is any text without such a word."""

    name = "test/cosine-dial"
    dimension = 384

    def embed(self, texts):
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            dial = re.search(r"\bcos(\d\d)\b", text)
            cosine = int(dial.group(1)) / 100 if dial else 1.0
            out[i, 0], out[i, 1] = cosine, math.sqrt(1 - cosine * cosine)
        return out


# Query "vacuum freeze horizon": three terms, no note holds "horizon", so the best note covers
# two thirds of the query. BM25 and meaning disagree: a.md is the best keyword match and the
# farthest in meaning; d.md shares no word and is the closest in meaning.
FUSION_NOTES = {
    "a.md": "# A\n\nvacuum freeze cos10\n",
    "b.md": "# B\n\nvacuum cos60\n",
    "c.md": "# C\n\nfreeze freeze freeze alpha beta cos40\n",
    "d.md": "# D\n\nwraparound autovacuum cos85\n",
    "e.md": "# E\n\nvacuum freeze alpha beta gamma delta epsilon zeta eta theta cos30\n",
    "f.md": "# F\n\nunrelated text cos05\n",
    "g.md": "# G\n\nnothing here cos00\n",
}


def _z(scores: dict[str, float]) -> dict[str, float]:
    mean = sum(scores.values()) / len(scores)
    spread = (sum((v - mean) ** 2 for v in scores.values()) / len(scores)) ** 0.5
    return {k: (v - mean) / spread for k, v in scores.items()}


def _order(scores: dict[str, float]) -> list[str]:
    return sorted(scores, key=lambda k: -scores[k])


@pytest.mark.vectors
def test_hybrid_ranking_is_the_fusion_rule(org, tmp_path):
    query = "vacuum freeze horizon"
    with connect(org.settings) as conn:
        scan(conn, make_vault(tmp_path / "f", FUSION_NOTES))
        embed_pending(conn, DialEmbedder())
        keyword = {h.path: h for h in search(conn, query, mode="keyword", limit=50).hits}
        semantic = {h.path: h for h in search(conn, query, mode="semantic", limit=50, embedder=DialEmbedder()).hits}
        hybrid = search(conn, query, mode="hybrid", limit=50, embedder=DialEmbedder())
    # The two sides, each on its own (every note has a vector, so all are candidates).
    assert list(keyword) == ["a.md", "e.md", "c.md", "b.md"]
    assert list(semantic) == ["d.md", "b.md", "c.md", "e.md", "a.md", "f.md", "g.md"]
    bm25 = {path: keyword[path].keyword_score if path in keyword else 0.0 for path in semantic}
    cosine = {path: hit.semantic_score for path, hit in semantic.items()}
    coverage = max(h.matched_terms / h.query_terms for h in keyword.values())
    assert coverage == pytest.approx(2 / 3)

    # The rule in docs/recall.md: a * z(BM25) + (1 - a) * z(cosine), a = 0.7 * coverage.
    def fused(weight):
        zk, zc = _z(bm25), _z(cosine)
        return {p: weight * zk[p] + (1 - weight) * zc[p] for p in bm25}

    rule = fused(0.7 * coverage)
    # b.md (one word, fairly close) first; d.md (no word, closest) above a.md (both words, far).
    assert _order(rule) == ["b.md", "d.md", "c.md", "e.md", "a.md", "f.md", "g.md"]
    assert paths(hybrid) == _order(rule)
    assert {h.path: h.score for h in hybrid.hits} == pytest.approx(rule)

    # The fixture tells the rule from its likely mistakes: each of these ranks differently.
    rrf = {p: 1 / (60 + list(semantic).index(p) + 1) for p in semantic}
    for rank, p in enumerate(keyword, 1):
        rrf[p] += 1 / (60 + rank)
    wrong = {
        "weight without coverage": fused(0.7),
        "equal weights": fused(0.5),
        "keyword alone": bm25,
        "meaning alone": cosine,
        "reciprocal rank fusion": rrf,
    }
    for name, scores in wrong.items():
        assert _order(scores) != paths(hybrid), name


def test_keyword_search_beyond_its_depth_keeps_the_best_notes(org, tmp_path):
    # 34 notes hold both words; a longer note scores lower (BM25 length normalisation).
    pad = [f"pad{i}" for i in range(40)]
    notes = {f"k/{i:02}.md": f"# K {i}\n\nvacuum freeze {' '.join(pad[:i])}\n" for i in range(34)}
    with connect(org.settings) as conn:
        scan(conn, make_vault(tmp_path / "deep", notes))
        everything = search(conn, "vacuum freeze", mode="keyword", limit=50)  # depth 150: every match
        assert paths(everything) == sorted(notes)
        top = search(conn, "vacuum freeze", mode="keyword", limit=10)  # depth 30 of 34 matches
    assert paths(top) == sorted(notes)[:10]
    assert [h.keyword_rank for h in top.hits] == list(range(1, 11))


@pytest.mark.vectors
def test_embedding_is_incremental_and_model_change_detected(conn, tmp_path):
    embedder = HashEmbedder()
    assert embed_pending(conn, embedder).embedded == 6
    assert embed_pending(conn, embedder).embedded == 0
    vault = tmp_path / "v"
    (vault / "git/log.md").write_text("# Pretty log\n\nShow the commit graph.\n\n## Colours\n\nAdd --color.\n")
    scan(conn, vault)
    # Only the changed note's chunks need vectors; the others kept theirs.
    assert conn.execute("SELECT count(*) AS n FROM vault_chunks WHERE embedding IS NULL").fetchone()["n"] == 2
    conn.rollback()
    assert embed_pending(conn, embedder).embedded == 2

    class Other(HashEmbedder):
        name = "test/another-model"

    with pytest.raises(InputError, match="pass --reset"):
        embed_pending(conn, Other())
    # Queries with a different model are refused too, falling back to keyword.
    result = search(conn, "vacuum", mode="hybrid", embedder=Other())
    assert result.used == "keyword" and "vectors were made with test/hash-bag-of-words" in result.notice
    assert embed_pending(conn, Other(), reset=True).embedded == 7
    models = conn.execute("SELECT DISTINCT embed_model FROM vault_chunks").fetchall()
    assert models == [{"embed_model": "test/another-model"}]
