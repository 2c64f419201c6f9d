"""Owner-approved texts: the way past a write scan's false positive (migration 0037).

An owner approves one exact text with a reason; from then on any agent's write of exactly
that text skips the secret and injection scans (checks/write.py, and the database's copy in
migrations/repeatable/write_checks.sql), never the control and invisible-character checks.
Who may approve is the database's rule (org_approve_text: owners only); this module calls it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime

from ..checks.rules import FIELD_RULES, NOTEBOOK_CAPS
from ..checks.write import control_chars, invisible_chars
from ..db import Conn, first
from ..db.connect import current_agent
from ..db.errors import translated
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import InputError


@dataclass
class Approval:
    sha256: str
    approved_by: str
    approved_at: datetime
    reason: str


def text_sha256(text: str) -> str:
    """The key an approval is stored under (the database's org_text_sha256)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@owns_transaction
def approve(conn: Conn, text: str, reason: str) -> Approval:
    """Approve `text` (stripped, as a write stores it) for the write scans; owners only."""
    text = text.strip()
    reason = reason.strip()
    if not text:
        raise InputError("the text to approve is empty")
    if len(text) > max(NOTEBOOK_CAPS.values()):
        raise InputError(f"the text is {len(text)} characters; the limit is {max(NOTEBOOK_CAPS.values())}")
    if control_chars(text) or invisible_chars(text):
        raise InputError("the text contains control or invisible characters, which are never approved")
    if not reason:
        raise InputError("--reason is required: say why this text is no secret and no injection")
    if len(reason) > FIELD_RULES["reason"][1]:
        raise InputError(f"reason is {len(reason)} characters; the limit is {FIELD_RULES['reason'][1]}")
    with translated(conn):
        current_agent(conn)
        digest = first(conn, sql("approvals.approve"), {"text": text, "reason": reason})["sha256"]
        row = first(conn, sql("approvals.get"), {"sha256": digest})
    conn.commit()
    return Approval(**row)


def approved(conn: Conn, text: str) -> bool:
    """Whether an owner approved exactly this text."""
    with translated(conn):
        return bool(first(conn, sql("approvals.approved"), {"text": text})["approved"])


@owns_transaction
def list_approvals(conn: Conn, limit: int = 100) -> list[Approval]:
    with translated(conn):
        rows = conn.execute(sql("approvals.list"), {"limit": limit}).fetchall()
    conn.commit()
    return [Approval(**r) for r in rows]
