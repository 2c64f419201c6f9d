"""The warm helper: one small process per user and database that keeps the query model and a
connection open, so `recall` and `context` answer in a fraction of a cold start.

- `client` (standard library only) finds the helper and asks it; any failure means None,
  and the caller answers the cold way. It is imported before anything heavy.
- `server` is the helper's loop: a Unix socket in a folder only the user can enter, one
  request at a time, gone after an idle timeout.
- `resident` holds what the helper keeps open (the query model, one connection) and hands it
  to a command per request, acting as the request's agent exactly as a cold process would.

`ask()` is the one call a face needs (the CLI, the harness hooks).
"""

from __future__ import annotations

from .client import Reply, ask, enabled

__all__ = ["Reply", "ask", "enabled"]
