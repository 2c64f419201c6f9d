"""Bounds on what one call may cost the database: query size, statement time, lock waits."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import InputError


@dataclass(frozen=True)
class Bound:
    """An integer option's range and default, read by every face (click's IntRange, the
    MCP tool's and the API's schema) and checked again by the library."""

    low: int
    high: int
    default: int
    option: str = "--limit"

    def check(self, value: int) -> int:
        if not self.low <= value <= self.high:
            raise InputError(f"{self.option} must be between {self.low} and {self.high}, not {value}")
        return value


# Hits of one recall, across the three arms (also the k of `eval golden` and `eval noise`):
# a hook's budget holds about 8 one-line hits; past 50 an answer is a search, not a recall.
RECALL_HITS = Bound(1, 50, 8)
# Messages of one search of the session archive.
SESSION_HITS = Bound(1, 50, 10)

# A question is a sentence, not a document. The longest question of the golden sets is
# under 200 characters and 30 words, and SciFact's longest claim is 255 characters; the
# review's 400 negated terms (2.7 KB) kept the fact arm busy past 100 s.
MAX_QUERY_CHARS = 1000
MAX_QUERY_WORDS = 64

# Every statement of a connection cli-org opens ends within this many seconds (override
# with CLI_ORG_STATEMENT_TIMEOUT); a recall takes tens of milliseconds, a scan batch a few
# seconds. Long admin jobs (scan, embed, import, init) open their connections unbounded.
STATEMENT_TIMEOUT = 30.0
# How often the server checks that the client is still there while a query runs, so a
# killed client's query stops instead of running on (PostgreSQL 14+).
CLIENT_CHECK_MS = 1000
# How long admin work waits for a lock another session holds before naming the holder
# (override with CLI_ORG_LOCK_WAIT).
LOCK_WAIT = 30.0


EMPTY = "is empty; say what to look for"


def check_words(text: str) -> str:
    """Refuse a question or search words that are empty or only whitespace: every face checks
    this before anything runs (the CLI as a usage error, the MCP tools as an argument error),
    so a blank question is refused rather than answered with "nothing found"."""
    if not text.strip():
        raise InputError(EMPTY)
    return text


def check_query(query: str, what: str = "query") -> str:
    """Refuse a query that is blank (check_words: the library holds the rule too, so no
    caller gets "nothing found" for an empty question), too long, or with too many words
    to be a question."""
    if not query.strip():
        raise InputError(f"the {what} {EMPTY}")
    if len(query) > MAX_QUERY_CHARS:
        raise InputError(f"the {what} is {len(query)} characters; ask in at most {MAX_QUERY_CHARS}")
    words = len(query.split())
    if words > MAX_QUERY_WORDS:
        raise InputError(f"the {what} has {words} words; ask in at most {MAX_QUERY_WORDS}")
    return query
