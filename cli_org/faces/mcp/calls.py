"""The tool call the front answers itself (front.py) before the SDK server is up, and what it
shares with that server (server.py): the recall's text and the words of a refusal. No SDK,
no pydantic: this module loads with the front.

Why (issue 37): importing the SDK takes 0.8 to 1 s of a fresh process's life and the Org
about 0.3 s beside it, so a first `org_recall` queued behind both was answered 1.5 s after
spawn where a cold `cli-org recall` takes 0.7 s (benchmarks/mcp_start.py). The Org opens
first now, and the front answers an `org_recall` on it while the SDK loads.

The front takes a call only when the SDK server would answer it in exactly these words: the
arguments are plainly valid (`early_arguments`); anything else, a bad argument included,
waits for the SDK server, which says what is wrong.
"""

from __future__ import annotations

import re
import sys
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...errors import InputError, OrgError
from ...limits import RECALL_HITS, check_words

if TYPE_CHECKING:
    from ...org import Org

FACE = "mcp"  # tool_calls.face, for the calls of the front and of the SDK server
RECALL = "org_recall"
RECALL_ARGUMENTS = ("question", "project", "limit")


def recall_text(org: Org, question: str, project: str | None = None, limit: int = RECALL_HITS.default) -> str:
    """What org_recall answers: the recall's notices, a line each, then its text."""
    result = org.recall(question, project=project, limit=limit).result
    # as org_search says the vault's: a first line each
    return "".join(f"notice: {n}\n" for n in result.warnings) + result.text


def early_arguments(name: object, arguments: object) -> dict[str, Any] | None:
    """The arguments of a call the front may answer (org_recall's, each of the type and in
    the range the tool's schema gives, the question not blank), or None: the SDK server's."""
    if name != RECALL or not isinstance(arguments, dict) or not set(arguments) <= set(RECALL_ARGUMENTS):
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


def answer_early(org: Org, arguments: dict[str, Any], reply: Callable[[str, bool], None]) -> None:
    """Answer an early call: `reply` gets its text and whether it is an error, as the SDK
    server says them (its `_outcome` and `in_tool_terms`); then its line in the call log (a
    write the answer need not wait for)."""
    import time

    from ...db.errors import translated

    started = time.perf_counter()
    try:
        with translated():
            text, failed = recall_text(org, **arguments), False
    except OrgError as exc:
        text, failed = in_tool_terms(str(exc), set(RECALL_ARGUMENTS)), True
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        text, failed = unexpected(exc), True
    reply(text, failed)
    org.log_call(RECALL, not failed, started)


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
