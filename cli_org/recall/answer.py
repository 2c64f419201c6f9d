"""Run the arms, merge them, render the compact text answer, and log the call."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ..checks.write import check_field
from ..db import Conn
from ..db.connect import on_replica
from ..db.errors import translated
from ..db.migrate import NO_VECTORS, vectors_ready
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import ConfigError, InputError
from ..limits import RECALL_HITS, check_query
from ..local.project import project_root
from ..shaping import SHAPING, VaultShaping
from ..store.facts import age, fact_words
from ..text import one_line
from . import ARMS
from .facts_arm import FactHit, candidates, lexical_inputs, lexical_texts, recall_facts, settle_leads
from .inputs import UNEMBEDDED_SCAN, read_inputs
from .marks import NOTE, Marks, folded, mark_text, read_marks
from .memory_arm import MemoryHit, recall_memory, recall_notebook
from .merge import merge
from .terms import positive_words, terms
from .vault_arm import VaultHit, recall_vault

if TYPE_CHECKING:
    import numpy as np

    from ..config import Settings
    from ..vault.embedders import Embedder

NOTHING = "nothing found"
MEMORY_CHARS = 220


@dataclass
class RecallHit:
    arm: str
    text: str  # the line printed for this hit
    why: str
    data: dict[str, Any]
    similarity: float | None = None  # cosine to the question, where an arm measured one
    whole: bool = False  # a fact holding every word of the question (the strict pass)


@dataclass
class RecallResult:
    query: str
    project: str | None
    limit: int
    hits: list[RecallHit] = field(default_factory=list)
    arms: list[str] = field(default_factory=list)  # arms that answered
    text: str = NOTHING
    ms: float = 0.0
    notice: str | None = None  # the vault's (no vectors, no model), or a server without pgvector
    # Current facts the reader can see that have no vector: recall finds them by their words
    # only. Said with the command that stores them (_unembedded_text).
    vectors_notice: str | None = None
    # Memory-file lines left out as instructions (issue 33): where, never the text.
    memory_notice: str | None = None

    @property
    def notices(self) -> list[str]:
        return [n for n in (self.vectors_notice, self.memory_notice, self.notice) if n]

    @property
    def warnings(self) -> list[str]:
        """The notices said before a text answer (CLI, MCP): what the reader should know about
        what the answer cannot hold. The vault's fallback notice stays with --json and search."""
        return [n for n in (self.vectors_notice, self.memory_notice) if n]

    @property
    def chars(self) -> int:
        return len(self.text) + 1  # with its newline, as printed


class _QueryOnce:
    """The caller's embedder, remembering its last answer: the fact and vault arms embed the
    same question, and the second asks for it again."""

    def __init__(self, embedder: Embedder):
        self._embedder = embedder
        self.name = embedder.name
        self.dimension = embedder.dimension
        self._last: tuple[list[str], np.ndarray] | None = None

    def knows_word(self, word: str) -> bool:
        """The query model reads `word` as one token of its vocabulary: a word of ordinary
        English (or a very common name), not a product name it never learned whole."""
        ready = getattr(self._embedder, "ready", None)  # the ONNX tokenizer loads with the model
        try:
            if ready is not None:
                ready()
        except ConfigError:  # a broken model: recall's vault arm says so; no word is known
            return False
        tokenizer = getattr(self._embedder, "tokenizer", None)
        return tokenizer is not None and tokenizer.token_to_id(word) is not None

    def embed(self, texts: list[str]) -> np.ndarray:
        if self._last is not None and self._last[0] == texts:
            return self._last[1]
        vectors = self._embedder.embed(texts)
        if len(texts) == 1:
            self._last = (list(texts), vectors)
        return vectors


def parse_arms(spec: str | None) -> tuple[str, ...]:
    if not spec:
        return ARMS
    arms = tuple(a.strip() for a in spec.split(",") if a.strip())
    bad = [a for a in arms if a not in ARMS]
    if bad or not arms:
        raise InputError(f"--arms takes a comma-separated list of {', '.join(ARMS)}; not {', '.join(bad) or spec!r}")
    return arms


@owns_transaction
def recall(
    conn: Conn,
    query: str,
    *,
    settings: Settings,
    project: str | None = None,
    limit: int = RECALL_HITS.default,
    arms: tuple[str, ...] = ARMS,
    embedder: Embedder | None = None,
    log: bool = True,
) -> RecallResult:
    started = time.perf_counter()
    RECALL_HITS.check(limit)
    check_query(query, "question")
    check_field("project", project, scan=False)
    result = RecallResult(query, project, limit)
    facts: list[FactHit] = []
    memory: list[MemoryHit] = []
    left_out: list[MemoryHit] = []  # memory-file lines that read as instructions
    vault: list[VaultHit] = []
    # Words excluded with `-` narrow the fact arm's full-text query; the memory and vault
    # arms match words, so they drop them. A question of exclusions only asks for nothing.
    wanted = " ".join(positive_words(query))
    if embedder is not None and not vectors_ready(conn):
        # A server without pgvector: every arm answers by keyword, with one notice.
        embedder, result.notice = None, f"{NO_VECTORS}; showing keyword results"
    if embedder is not None:
        embedder = _QueryOnce(embedder)  # type: ignore[assignment]  # the Embedder protocol's embed
    # Every arm gathers the same pool whatever the limit, so the limit only cuts one order.
    pool = max(limit, settings.answer_shaping.pool)
    with translated(conn):
        # One statement for what the arms need first (recall/inputs.py): the question's words
        # the memory lacks, the count of facts without a vector, the fact arm's word pieces
        # and HNSW settings, the caller's notebook entries.
        semantic = "fact" in arms and embedder is not None
        texts = lexical_texts(query) if "fact" in arms else None
        inputs = read_inputs(
            conn,
            texts=texts,
            words=terms(wanted) if embedder is not None else None,
            notebook="memory" in arms and bool(wanted),
            counted=semantic,
            ef_search=candidates(pool) if semantic and texts is not None else None,
        )
        unknown = embedder is not None and bool(foreign_terms(inputs["unknown"], embedder, settings.vault_shaping))
        if semantic:
            result.vectors_notice = _unembedded_text(int(inputs["unembedded"]))
        if "fact" in arms:
            facts = recall_facts(
                conn,
                query,
                project=project,
                limit=pool,
                embedder=embedder,
                shaping=settings.fact_shaping,
                unknown=unknown,
                pieces=lexical_inputs(inputs) if texts is not None else None,
                scan_set=semantic and texts is not None,
            )
        if "memory" in arms and wanted:
            half = pool // 2
            memory = recall_memory(project_root(settings.root), wanted, limit=half, left_out=left_out)
            memory += recall_notebook(conn, wanted, limit=half, entries=inputs["notebook"])
            memory.sort(key=lambda h: -h.matched)  # stable: files before notebook on a tie
        if "vault" in arms and wanted:
            vault, notice = recall_vault(
                conn,
                wanted,
                limit=pool,
                embedder=embedder,
                exclude=settings.recall_exclude,
                shaping=settings.vault_shaping,
                unknown=unknown,
            )
            result.notice = notice or result.notice
        if "memory" in arms and wanted and left_out:
            result.memory_notice = _left_out_notice(left_out)
        if vault:
            settle_leads(facts, vault[0].hit.semantic_score, settings.fact_shaping)
        chosen = merge(facts, memory, vault, settings.answer_shaping, limit)[:limit]
        shown = [item for item in chosen if isinstance(item, FactHit)]
        # One statement for the links of every fact shown (recall/marks.py), none without one.
        marks = read_marks(conn, [h.fact.id for h in shown], {h.fact.id: h.authors or [h.fact.author] for h in shown})
        again = folded([h.fact.id for h in shown], marks)  # another agent's words of a fact shown
        chosen = [c for c in chosen if not (isinstance(c, FactHit) and c.fact.id in again)]
        shown = [h for h in shown if h.fact.id not in again]
        result.hits = [_render(item, marks) for item in chosen]
        result.hits += _one_hop(shown, marks, project, room=limit - len(chosen))
        result.arms = [arm for arm in ARMS if any(h.arm == arm for h in result.hits)]
        result.text = "\n".join(h.text for h in result.hits) if result.hits else NOTHING
        if any(h.data.get("contradicts") or h.data.get("contradicted_by") for h in result.hits):
            result.text += "\n" + NOTE
        result.ms = (time.perf_counter() - started) * 1000
        # A replica cannot store the log line: the face records it on the primary after the
        # answer (record_recall), so a recall read from the replica is still counted.
        if log and not on_replica(conn):
            _log(conn, result)
            conn.commit()
    return result


def _unembedded_text(n: int) -> str | None:
    """The notice while current facts the caller can read lack their author's vector (written
    before the query model existed, or loaded in bulk): recall matches them by words only.
    `n`: `recall.inputs_counted`'s count of migration 0038's list, bounded by UNEMBEDDED_SCAN."""
    if not n:
        return None
    count = f"{n}+" if n == UNEMBEDDED_SCAN else str(n)
    return (
        f"{count} fact{'' if n == 1 else 's'} {'has' if n == 1 else 'have'} no vector yet, so recall finds "
        f"{'it' if n == 1 else 'them'} by words only: run `cli-org vault embed` "
        "(or `cli-org facts embed`) as the database admin"
    )


def _left_out_notice(left_out: list[MemoryHit]) -> str:
    """Which memory-file lines were left out as instructions (the lines themselves are not
    repeated: the notice reaches the agent too)."""
    where = ", ".join(f"{h.file}:{h.line}" for h in left_out[:3]) + (", ..." if len(left_out) > 3 else "")
    return (
        f"{len(left_out)} memory-file line{'s' if len(left_out) > 1 else ''} left out: "
        f"{'they read as instructions' if len(left_out) > 1 else 'it reads as an instruction'} to the agent ({where})"
    )


def _log(conn: Conn, result: RecallResult) -> None:
    conn.execute(
        sql("recall.log"),
        {
            "project": result.project,
            # the log holds one line (migration 0023); the question may hold several.
            "query": one_line(result.query),
            "arms": result.arms,
            "hits": len(result.hits),
            "chars": result.chars,
            "ms": round(result.ms),
            # the hits as returned, for a later look without asking again (migration 0034)
            **stored_hits(result.hits),
        },
    )


def stored_hits(hits: list[RecallHit]) -> dict[str, list[object]]:
    """The hits as the `log` statement stores them: one array per column, in order. A fact
    hit keeps its id, a memory hit its file (notebook:STORE) and line (the entry's id), a
    vault hit its note's path; each keeps the line it printed."""
    names = ("hit_arms", "hit_facts", "hit_paths", "hit_lines", "hit_texts")
    columns: dict[str, list[object]] = {name: [] for name in names}
    for h in hits:
        memory = h.arm == "memory"
        columns["hit_arms"].append(h.arm)
        columns["hit_facts"].append(h.data["id"] if h.arm == "fact" else None)
        columns["hit_paths"].append(h.data["file"] if memory else h.data.get("path"))
        columns["hit_lines"].append(h.data["line"] if memory else None)
        columns["hit_texts"].append(_storable(h))
    return columns


def _storable(hit: RecallHit) -> str:
    """The text a hit is stored with. A line of a bot's memory FILE never passed the write
    checks (it is read from the checkout, not the database), so only where it came from is
    stored, never the line: storing it would put in the database what `remember` refuses."""
    if hit.arm == "memory" and not str(hit.data["file"]).startswith("notebook:"):
        return f"[memory] {hit.data['file']}:{hit.data['line']} (a line of that file; not stored)"
    return hit.text


@owns_transaction
def record_recall(conn: Conn, result: RecallResult) -> None:
    """On the primary, the write a recall read from a replica could not make there: its
    line in recall_events. (Fact vectors are stored when facts are written: store/vectors.py.)"""
    if on_replica(conn):
        raise ConfigError("record_recall writes, so it needs a connection to the primary, not the replica")
    with translated(conn):
        _log(conn, result)


def foreign_terms(unknown: list[str] | None, embedder: Embedder, shaping: VaultShaping = SHAPING) -> list[str]:
    """Of the question's words that no vault note and no current fact holds (`unknown`, from
    `recall.inputs`), those that, unless the shaping says otherwise, the query model does not
    know as one token either: the name of a subject the memory has never seen ("rabbitmq",
    "pinia"). Such a question likely asks about what the memory lacks, so recall's
    meaning-based hits then need the shaping's higher `unknown` floors
    (benchmarks/JOURNAL.md, "Recall by meaning")."""
    unknown = unknown or []
    if shaping.unknown_needs_foreign and isinstance(embedder, _QueryOnce):
        unknown = [w for w in unknown if not embedder.knows_word(w)]
    return list(unknown)


def _one_hop(shown: list[FactHit], marks: dict[int, Marks], project: str | None, *, room: int) -> list[RecallHit]:
    """The current facts the shown facts depend on, each once, in the room the limit leaves
    after the direct hits (never in place of one), marked "needed by #N". A fact shown already
    (or the same claim in other copies) is not repeated; one outside the asked project's scope
    is left out, as the fact arm leaves it out. Read with the marks: no statement of its own."""
    ids = {h.fact.id for h in shown}
    claims = {(h.fact.subject, h.fact.claim, h.fact.project) for h in shown}
    out: list[RecallHit] = []
    for hit in shown:
        for needed in marks[hit.fact.id].needs if hit.fact.id in marks else []:
            same = (needed.subject, needed.claim, needed.project)
            if len(out) >= room or needed.id in ids or same in claims:
                continue
            if project is not None and needed.project not in (None, project):
                continue
            ids.add(needed.id)
            claims.add(same)
            hop = FactHit(needed, "hop", 0.0, authors=[needed.author], why=f"needed by #{hit.fact.id} (depends-on)")
            out.append(_render(hop, {}, needed_by=hit.fact.id))
    return out


def _render(item: FactHit | MemoryHit | VaultHit, marks: dict[int, Marks], needed_by: int | None = None) -> RecallHit:
    if isinstance(item, FactHit):
        f = item.fact
        authors = ", ".join(item.authors or [f.author])
        mine = marks.get(f.id)
        line = f"[fact #{f.id}] {fact_words(f)} ({one_line(f.source)}; {authors}; {age(f.created_at)})"
        line += mark_text(mine, needed_by)
        seen_by = list(dict.fromkeys([*(item.authors or [f.author]), *(mine.confirmed_by if mine else [])]))
        if item.match == "strict":
            why = "every word matched"
        elif item.match == "loose":
            why = f"loose: {item.score:.0%} of terms at word starts"
        else:
            why = item.why
        return RecallHit(
            "fact",
            line,
            why,
            {
                **asdict(f),
                "authors": item.authors,
                "match": item.match,
                "score": item.score,
                "similarity": item.similarity,
                "z": item.z,
                "age": age(f.created_at),
                # issue 36: who saw it (its authors, then its confirmers), and its live links
                "seen_by": seen_by,
                "confirmed_by": mine.confirmed_by if mine else [],
                "contradicts": mine.contradicts if mine else [],
                "contradicted_by": mine.contradicted_by if mine else [],
                "needs": [n.id for n in mine.needs] if mine else [],
                "needed_by": needed_by,
            },
            similarity=item.similarity,
            whole=item.match == "strict",
        )
    if isinstance(item, MemoryHit):
        where = item.file if item.notebook else f"{one_line(item.file)}:{item.line}"
        line = f"[memory] {where} {one_line(item.text, MEMORY_CHARS)}"
        return RecallHit("memory", line, f"{item.matched} of {item.terms} terms at word starts", asdict(item))
    hit = item.hit
    where = hit.path if not hit.heading or hit.heading == hit.title else f"{hit.path} # {hit.heading}"
    line = f"[vault] {one_line(where)}: {one_line(hit.snippet)}"
    scores = {
        k: getattr(hit, k)
        for k in (
            "score",
            "keyword_score",
            "keyword_rank",
            "matched_terms",
            "query_terms",
            "semantic_score",
            "semantic_rank",
        )
    }
    data = {
        "path": hit.path,
        "title": hit.title,
        "heading": hit.heading,
        "snippet": hit.snippet,
        **scores,
        "support": item.support,
    }
    why = "keyword-supported" if item.support == "keyword" else f"vector-only, similarity {hit.semantic_score:.2f}"
    return RecallHit("vault", line, why, data, similarity=hit.semantic_score)
