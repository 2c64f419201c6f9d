"""The tool calls the front answers itself (front.py) before the SDK server is up, and what
it shares with that server (server.py): the recall's and the remember's text, the harness a
call comes through, and the words of a refusal. No SDK, no pydantic: this module loads with
the front.

Why (issue 37): importing the SDK takes 0.8 to 1 s of a fresh process's life and the Org
about 0.3 s beside it, so a first `org_recall` queued behind both was answered 1.5 s after
spawn where a cold `cli-org recall` takes 0.7 s (benchmarks/mcp_start.py). The Org opens
first now, and the front answers an `org_recall` on it while the SDK loads.

The same for `org_remember` (issue 38): a write sent right after the handshake waited 0.8 to
0.9 s for the SDK, against 13 to 18 ms for the next ones; the Org's query model (the claim's
vector, the injection check) loads from the start, beside the connection.

The front takes a call only when the SDK server would answer it in exactly these words: the
arguments are plainly valid (`early_call`); anything else, a bad argument included, waits
for the SDK server, which says what is wrong.
"""

from __future__ import annotations

import re
import sys
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...checks.rules import KINDS, MAX_ID
from ...db.session import owns_transaction
from ...errors import InputError, OrgError
from ...limits import RECALL_HITS, check_words

if TYPE_CHECKING:
    from ...db import Conn
    from ...org import Org

FACE = "mcp"  # tool_calls.face, for the calls of the front and of the SDK server
RECALL = "org_recall"
RECALL_ARGUMENTS = ("question", "project", "limit")
REMEMBER = "org_remember"
REMEMBER_ARGUMENTS = ("subject", "claim", "source", "project", "kind", "supersedes", "inferred", "allow_duplicate")


def recall_text(org: Org, question: str, project: str | None = None, limit: int = RECALL_HITS.default) -> str:
    """What org_recall answers: the recall's notices, a line each, then its text."""
    result = org.recall(question, project=project, limit=limit).result
    # as org_search says the vault's: a first line each
    return "".join(f"notice: {n}\n" for n in result.warnings) + result.text


@owns_transaction
def remember_text(conn: Conn, org: Org, via: str | None, **arguments: Any) -> str:
    """What org_remember answers: the stored fact's line (render.remembered_line)."""
    from ...store.facts import remember
    from ...store.sources import source_hash_at
    from ..render import remembered_line

    s = org.settings
    source_hash = source_hash_at(arguments["source"], s.root, s.vault)
    return remembered_line(remember(conn, **arguments, via=via, embedder=org.embedder, source_hash=source_hash))


def client_via(name: object) -> str | None:
    """RUNTIME@HOST for a client that calls itself `name` (its clientInfo), in the shape of
    a fact's via (checks/rules.py): characters outside [A-Za-z0-9_.-] become `-`."""
    from ...setup import via

    runtime = re.sub(r"[^A-Za-z0-9_.-]", "-", name.strip())[:64].strip("-") if isinstance(name, str) else ""
    return via(runtime) if runtime else None


def early_call(name: object, arguments: object) -> tuple[str, dict[str, Any]] | None:
    """The tool and arguments of a call the front may answer (org_recall's or org_remember's,
    each argument of the type and in the range the tool's schema gives), or None: the SDK
    server's."""
    if not isinstance(arguments, dict):
        return None
    taken = _recall_arguments(arguments) if name == RECALL else None
    if name == REMEMBER:
        taken = _remember_arguments(arguments)
    return None if taken is None else (str(name), taken)


def _recall_arguments(arguments: dict[str, Any]) -> dict[str, Any] | None:
    """org_recall's, the question not blank."""
    if not set(arguments) <= set(RECALL_ARGUMENTS):
        return None
    question, project = arguments.get("question"), arguments.get("project")
    limit = arguments.get("limit", RECALL_HITS.default)
    if not isinstance(question, str) or not (project is None or isinstance(project, str)):
        return None
    if type(limit) is not int or not RECALL_HITS.low <= limit <= RECALL_HITS.high:
        return None  # a bool, a float, a numeric string: the SDK's to take or refuse
    try:
        check_words(question)
    except InputError:
        return None
    return {"question": question, "project": project, "limit": limit}


def _remember_arguments(arguments: dict[str, Any]) -> dict[str, Any] | None:
    """org_remember's, with its defaults (what the library then refuses, it refuses for both)."""
    taken = {"project": None, "kind": "fact", "supersedes": None, "inferred": False, "allow_duplicate": False}
    taken.update(arguments)
    if set(taken) != set(REMEMBER_ARGUMENTS):  # one missing, or one the tool does not declare
        return None
    if not all(isinstance(taken[k], str) for k in ("subject", "claim", "source")):
        return None
    if not (taken["project"] is None or isinstance(taken["project"], str)) or taken["kind"] not in KINDS:
        return None
    supersedes = taken["supersedes"]
    if not (supersedes is None or (type(supersedes) is int and 1 <= supersedes <= MAX_ID)):
        return None
    if type(taken["inferred"]) is not bool or type(taken["allow_duplicate"]) is not bool:
        return None
    return taken


def answer_early(
    org: Org, tool: str, arguments: dict[str, Any], via: str | None, reply: Callable[[str, bool], None]
) -> None:
    """Answer an early call: `reply` gets its text and whether it is an error, as the SDK
    server says them (its `_outcome` and `in_tool_terms`); then its line in the call log (a
    write the answer need not wait for)."""
    import time

    from ...db.errors import translated

    started = time.perf_counter()
    declared = set(RECALL_ARGUMENTS if tool == RECALL else REMEMBER_ARGUMENTS)
    try:
        with translated():
            if tool == RECALL:
                text = recall_text(org, **arguments)
            else:
                text = org.call("facts.remember", lambda conn: remember_text(conn, org, via, **arguments))
            failed = False
    except OrgError as exc:
        text, failed = in_tool_terms(str(exc), declared), True
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        text, failed = unexpected(exc), True
    reply(text, failed)
    org.log_call(tool, not failed, started)


def warm_up_writes(org: Org) -> None:
    """A first write's one-time costs, paid as the server starts (store.facts.warm_up_writes)."""
    from contextlib import suppress

    from ...store.facts import warm_up_checks
    from ...store.facts import warm_up_writes as warm_up

    with suppress(Exception):  # a refusal or a lost database shows at the first real call
        warm_up_checks()  # first, holding no connection: it waits for the model
        org.run(warm_up)


def unexpected(exc: BaseException) -> str:
    """A crash's line for the model (its traceback goes to stderr)."""
    return f"unexpected error ({type(exc).__name__}); the server's stderr has the details"


# A command-line flag in a library message (`--source is required: ...`).
FLAG = re.compile(r"(?<![\w-])--([a-z][a-z-]*)")


def in_tool_terms(message: str, arguments: set[str]) -> str:
    """A refusal as an MCP caller reads it: a flag that is one of the tool's arguments is
    named as that argument (`--source` -> `'source'`); the CLI keeps its own words."""

    def named(flag: re.Match[str]) -> str:
        name = flag[1].replace("-", "_")
        return repr(name) if name in arguments else flag[0]

    return FLAG.sub(named, message)
