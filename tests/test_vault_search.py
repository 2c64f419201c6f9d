"""Keyword (BM25), semantic and hybrid ordering on tiny vaults where the answer is known."""

from pathlib import Path

import pytest
from fakes import HashEmbedder

from cli_org.db.connect import connect
from cli_org.errors import InputError
from cli_org.vault.embed import embed_pending
from cli_org.vault.scan import scan
from cli_org.vault.search import prefix_pattern, search

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


@pytest.mark.parametrize(
    "query",
    [
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
    ],
)
@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
def test_hostile_queries_never_error(conn, query, mode):
    result = search(conn, query, mode=mode, embedder=HashEmbedder())
    assert isinstance(result.hits, list)


@pytest.mark.parametrize("query", ["x" * 1001, " ".join(f"-zz{i}" for i in range(65))])
def test_oversized_queries_are_refused_with_the_bound(conn, query):
    with pytest.raises(InputError, match="at most"):
        search(conn, query, mode="keyword")


def test_bad_mode(conn):
    with pytest.raises(InputError):
        search(conn, "x", mode="fuzzy")


def test_semantic_and_hybrid_without_vectors_fall_back(conn):
    for mode in ("semantic", "hybrid"):
        result = search(conn, "vacuum", mode=mode, embedder=HashEmbedder())
        assert result.used == "keyword" and "no embeddings yet" in result.notice
        assert paths(result) == ["postgres/vacuum.md"]


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
    # A note only the vector side found still appears, below those both sides found.
    assert all(h.semantic_rank for h in hybrid.hits)


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
