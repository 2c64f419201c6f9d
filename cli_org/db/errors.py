"""Turn PostgreSQL errors that users can cause into cli-org's own errors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg import errors as pgerr

from ..errors import AccessDenied, DatabaseError, InputError, NotFound, OrgError
from . import Conn, first

# A write that reached a read-only server: the replica named as the primary, most likely.
READ_ONLY = (
    "this server is read-only (a replica): writes go to the primary; "
    "set CLI_ORG_DATABASE_URL to the primary and CLI_ORG_READ_URL to the replica"
)


def first_line(exc: BaseException) -> str:
    """The server's primary message, or the exception's first line."""
    diag = getattr(exc, "diag", None)
    primary = getattr(diag, "message_primary", None)
    return primary or (str(exc).strip().splitlines() or [type(exc).__name__])[0]


# Shutdown (57P01), crash (57P02), starting or stopping (57P03): the server is going away.
SERVER_GONE = {"57P01", "57P02", "57P03"}
LOST = "connection is lost"  # the driver's words for a connection that died under it


@contextmanager
def translated(conn: Conn | None = None) -> Iterator[None]:
    """Re-raise PostgreSQL errors as OrgError subclasses with one clear line."""
    try:
        yield
    except OrgError:
        raise
    except pgerr.InsufficientPrivilege as exc:
        msg = first_line(exc)
        if "row-level security" in msg:
            raise AccessDenied(f"an agent may write only as itself ({msg})") from None
        if msg.startswith("permission denied for"):
            who, member = _whoami(conn)
            if not member:
                raise AccessDenied(
                    f"role {who} is not a cli-org member ({msg}); an admin adds agents with `cli-org agents add`"
                ) from None
            raise AccessDenied(f"{msg}: agents may not do this") from None
        raise AccessDenied(msg) from None
    except pgerr.NoDataFound as exc:
        raise NotFound(first_line(exc)) from None
    except (pgerr.ObjectNotInPrerequisiteState, pgerr.InvalidParameterValue, pgerr.CheckViolation) as exc:
        raise InputError(first_line(exc)) from None
    except pgerr.QueryCanceled as exc:
        msg = first_line(exc)
        if "statement timeout" in msg:
            raise DatabaseError(
                f"the database stopped a statement that ran past CLI_ORG_STATEMENT_TIMEOUT ({msg}); "
                "ask a narrower question or raise the limit"
            ) from None
        raise DatabaseError(msg) from None
    except pgerr.NumericValueOutOfRange as exc:
        # A number no column holds (an id past bigint): the faces bound them (rules.MAX_ID),
        # this is the net under every other path (issue 33).
        raise InputError(
            f"a number is out of range ({first_line(exc)}): ids are whole numbers from 1 to 9223372036854775807"
        ) from None
    except pgerr.InvalidGrantOperation as exc:
        raise InputError(f"that role cannot be an agent's role ({first_line(exc)})") from None
    except pgerr.ReadOnlySqlTransaction:
        raise DatabaseError(READ_ONLY) from None
    except pgerr.UndefinedTable as exc:
        raise DatabaseError(f"{first_line(exc)}; run `cli-org init`") from None
    except UnicodeEncodeError as exc:
        # Text that cannot be UTF-8: a lone surrogate, which Python lets through from argv
        # (undecodable bytes), JSON escapes (MCP, web) or the library's callers; found by
        # stress/fuzz.py. Refused before anything reaches the server.
        bad = exc.object[exc.start : exc.end] if isinstance(exc.object, str) else ""
        where = ", ".join(f"U+{ord(c):04X}" for c in bad) or "a character"
        raise InputError(
            f"the text contains {where}, a lone surrogate that is not valid Unicode; send UTF-8 text"
        ) from None
    except psycopg.DataError as exc:
        if exc.sqlstate is None and "NUL" in str(exc):  # refused by the client, never sent
            raise InputError("the text contains a NUL character (U+0000), which PostgreSQL cannot store") from None
        raise DatabaseError(first_line(exc)) from None
    except psycopg.OperationalError as exc:
        gone = exc.sqlstate in SERVER_GONE or (
            exc.sqlstate is None and (conn.broken if conn is not None else LOST in str(exc))
        )
        if not gone:
            raise DatabaseError(first_line(exc)) from None
        # The server went away mid-command (stopped, crashed, restarted): say so, and what
        # is left (stress/stopped.py). Each command commits only whole units, so what was
        # not committed is gone and running it again finishes the job.
        raise DatabaseError(
            f"lost the database in the middle of the command ({first_line(exc)}); nothing uncommitted was kept: "
            "run it again once the server is back"
        ) from None
    except psycopg.Error as exc:
        raise DatabaseError(first_line(exc)) from None


def _whoami(conn: Conn | None) -> tuple[str, bool]:
    """The connected role, and whether it belongs to the member group."""
    if conn is None:
        return "the connected role", False
    try:
        conn.rollback()
        row = first(conn, "SELECT current_user AS u, pg_has_role(current_user, org_member_role(), 'member') AS member")
        return row["u"], row["member"]
    except psycopg.Error:
        return "the connected role", False
