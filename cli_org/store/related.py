"""What a new claim is to the current facts (issue 36): the same fact in other words, a
contradiction, or neither. One lookup for its users: `remember` (refuse the writer's own
paraphrase, record another agent's as a confirmation, link a contradiction) and the proposals
(a lesson a current fact already states is not proposed). The rule itself is sameness.judge.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..db import Conn
from ..db.queries import sql
from .sameness import judge
from .vectors import fact_text

# Candidates read each way (by words, and by meaning from the HNSW index) before the judge
# decides: a paraphrase or a contradiction of a fact is among the nearest few by meaning or
# shares its rarest words (the held-out pairs, benchmarks/sameness_eval.py); twenty judged
# cost well under a millisecond (the judge's median, benchmarks/RESULTS.md).
CANDIDATES = 10
# Nearest trusted vectors the HNSW scan keeps in its list while filters reject rows (the fact
# arm's width, recall/facts_arm.py NEAREST_CANDIDATES).
EF_SEARCH = 40


@dataclass
class Related:
    id: int
    subject: str
    claim: str
    author: str
    project: str | None
    relation: str  # "same" | "contradicts" (sameness.Judgement)
    similarity: float | None  # None: judged by words alone
    evidence: dict[str, Any]


def related(
    conn: Conn, subject: str, claim: str, project: str | None, vector: str | None, model: str | None
) -> list[Related]:
    """The current facts (of `project`, or org-wide) this claim is the same as or contradicts,
    the same ones first, then the nearest; in the caller's transaction, as the caller reads.
    `vector`: the claim's vector literal (vault.embedders.vector_literal of fact_text), or None
    on a database without vectors or with no model: then words alone decide."""
    text = fact_text(subject, claim)
    params: dict[str, Any] = {"text": text, "project": project, "limit": CANDIDATES}
    if vector is not None and model is not None:
        from ..vault.search import hnsw_scan

        with hnsw_scan(conn, EF_SEARCH):
            rows = conn.execute(sql("fact_vectors.related"), {**params, "query": vector, "model": model}).fetchall()
    else:
        rows = conn.execute(sql("facts.related_by_words"), params).fetchall()
    found = []
    for row in rows:
        similarity = None if row["similarity"] is None else float(row["similarity"])
        verdict = judge(text, fact_text(row["subject"], row["claim"]), similarity)
        if verdict is not None:
            found.append(
                Related(row["id"], row["subject"], row["claim"], row["author"], row["project"],
                        verdict.relation, similarity, verdict.evidence)
            )  # fmt: skip
    found.sort(key=lambda r: (r.relation != "same", -(r.similarity or 0.0), -r.id))
    return found
