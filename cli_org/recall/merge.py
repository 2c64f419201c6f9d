"""Merge the arms into one list: who gets which slots, in what order."""

from __future__ import annotations

from .facts_arm import FactHit
from .memory_arm import MemoryHit
from .vault_arm import VaultHit


def merge(
    facts: list[FactHit], memory: list[MemoryHit], vault: list[VaultHit], limit: int
) -> list[FactHit | MemoryHit | VaultHit]:
    """Strict facts and memory lines that hold every query word first (the most precise
    answers there are: an agent's own exact line once ranked below a generic note), then
    the facts that lead (close in meaning and standing out: FactShaping.leads), then the
    vault's best note, then the other memory lines, then loose facts, then the rest of the
    vault. Facts and memory each take at most half the slots, so the vault always has room."""
    half = max(1, limit // 2)
    strict = [f for f in facts if f.match == "strict"][:half]
    # Loose and semantic facts (the semantic pass's own rule caps its vector-only hits).
    loose = [f for f in facts if f.match != "strict"][: max(0, half - len(strict))]
    lines = memory[:half]
    whole = [m for m in lines if m.matched == m.terms]
    lead = [f for f in loose if f.lead]
    rest = [f for f in loose if not f.lead]
    order: list[FactHit | MemoryHit | VaultHit] = [
        *strict,
        *whole,
        *lead,
        *vault[:1],
        *[m for m in lines if m.matched != m.terms],
        *rest,
        *vault[1:],
    ]
    return order[:limit]
