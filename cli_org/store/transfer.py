"""Export and import: the whole org memory as JSON lines, merged back by id.

The file's first line is a header: {"kind": "header", "format": FORMAT, "migration": N,
"exported_at": ...}. Every other line is one record: an agent, a fact (retired and
superseded ones too, with their history fields), a restore, a pin (unpinned ones too), a
notebook entry with all its versions, a todo, a tidy-log row, a typed link (removed ones too). Records are written in an
order that import can follow (what a row refers to comes before it).

Both directions need the admin: an export reads every row (a member's view is filtered by
row-level security, so a member is refused rather than handed a partial copy), and an
import writes rows with their original ids, authors and timestamps. Import merges by id:
a record whose id is absent is added, one whose row is identical is already present, one
whose row differs is a conflict: reported, never overwritten. An agent that does not exist
is created as a role in the member group without a login (`cli-org agents add` documents
how to give an agent a login). Text is checked by the same write checks as every write.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from psycopg import errors as pgerr
from psycopg import sql as pgsql
from psycopg.types.json import Jsonb

from ..db import Conn, first
from ..db.errors import translated
from ..db.queries import sql
from ..db.session import owns_transaction
from ..errors import AccessDenied, InputError
from .vectors import store_unembedded

if TYPE_CHECKING:
    from ..vault.embedders import Embedder

FORMAT = 1
# An export larger than this is refused unread (files.py). A line is one record of at most a
# few KB (a claim holds at most 1,000 characters), so this holds well over 100,000 records.
MAX_IMPORT_BYTES = 512 << 20
# One record's line, measured before it is parsed (issue 33: a 10 MB claim ran past 60 s in
# the scans). The largest real record is a notebook entry with every version of it (a few
# KB each); a fact is at most ~4 KB of JSON.
MAX_LINE_CHARS = 4 << 20
# A time in an import may not lie further ahead than this (a created_at in 9999 sorted first
# in every list, forever); clocks of two machines differ by less.
FUTURE_SLACK = timedelta(days=1)

# The record kinds, in the order an import can follow; each one's export query is the
# named query transfer.<kind> (sql/transfer.sql).
KINDS = ("agent", "fact", "restore", "pin", "notebook_entry", "todo", "tidy", "link")
_TABLES = {
    "fact": "memory_facts",
    "restore": "memory_restores",
    "pin": "memory_pins",
    "notebook_entry": "notebook_entries",
    "todo": "org_todos",
    "tidy": "memory_tidy_log",
    "link": "memory_links",
}


@dataclass
class ExportResult:
    format: int
    migration: int
    records: dict[str, int]  # per kind


@dataclass
class KindCount:
    kind: str
    added: int = 0
    present: int = 0
    conflicting: int = 0
    conflicts: list[str] = field(default_factory=list)  # the keys (ids, agent names) in conflict


@dataclass
class ImportResult:
    format: int
    migration: int
    dry_run: bool
    kinds: list[KindCount]


def _require_admin(conn: Conn, doing: str) -> None:
    row = first(conn, sql("transfer.caller"))
    if row["agent"] is not None or not row["admin"]:
        who = row["agent"] or "a member role"
        raise AccessDenied(
            f"{doing} needs the database admin, not {who}: a member's view is filtered by row-level security"
            " (run it without --as/ORG_AGENT, connected as the admin)"
        )


def _migration(conn: Conn) -> int:
    return int(first(conn, "SELECT coalesce(max(version::int), 0) AS v FROM schema_migrations")["v"])


def _rows(conn: Conn, kind: str) -> Iterator[tuple[Any, dict[str, Any]]]:
    for row in conn.execute(sql(f"transfer.{kind}")):
        yield row["key"], row["row"]


def _utc(conn: Conn) -> None:
    # Timestamps in the file are UTC, whatever the server's zone; SET LOCAL ends with the transaction.
    conn.execute("SET LOCAL TimeZone = 'UTC'")


@owns_transaction
def export_lines(conn: Conn) -> tuple[list[str], ExportResult]:
    """The export, as lines without their newline: the header first."""
    with translated(conn):
        # One snapshot for every table read below.
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        _require_admin(conn, "export")
        _utc(conn)
        result = ExportResult(FORMAT, _migration(conn), {})
        at = first(conn, "SELECT now() AS at")["at"]
        lines = [
            _dump({"kind": "header", "format": FORMAT, "migration": result.migration, "exported_at": at.isoformat()})
        ]
        for kind in KINDS:
            n = 0
            for _key, row in _rows(conn, kind):
                lines.append(_dump({**row, "kind": kind}))
                n += 1
            result.records[kind] = n
        return lines, result


def _dump(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, sort_keys=True)


def parse(lines: Iterable[str]) -> tuple[dict[str, Any], list[tuple[int, str, dict[str, Any]]]]:
    """The header and the records (line number, kind, fields); a malformed line is an
    InputError naming its number, raised before anything is written. Each line is bounded
    before it is parsed; ids and times are checked here (_check_values)."""
    header: dict[str, Any] | None = None
    records: list[tuple[int, str, dict[str, Any]]] = []
    latest = datetime.now(UTC) + FUTURE_SLACK
    for number, line in enumerate(lines, start=1):
        if len(line) > MAX_LINE_CHARS:
            raise InputError(
                f"line {number}: {len(line):,} characters, longer than a record can be ({MAX_LINE_CHARS:,});"
                " nothing was imported"
            )
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"line {number}: not JSON ({exc.msg}); nothing was imported") from None
        except RecursionError:  # a 5,000-deep line was a traceback; no record nests like that
            raise InputError(f"line {number}: nested too deeply to be a record; nothing was imported") from None
        if not isinstance(record, dict) or not isinstance(record.get("kind"), str):
            raise InputError(f'line {number}: not a record (an object with a "kind"); nothing was imported')
        kind = record.pop("kind")
        if header is None:
            if kind != "header":
                raise InputError(f"line {number}: the first line must be the export header; nothing was imported")
            if not isinstance(record.get("format"), int) or not isinstance(record.get("migration"), int):
                raise InputError(f"line {number}: the header has no format or migration version")
            if record["format"] > FORMAT:
                raise InputError(
                    f"the file has export format {record['format']}, newer than this cli-org reads ({FORMAT});"
                    " upgrade cli-org to import it"
                )
            header = record
            continue
        if kind not in KINDS:
            raise InputError(f"line {number}: unknown kind {kind!r}; nothing was imported")
        key = "name" if kind == "agent" else "id"
        if kind == "agent" and not isinstance(record.get("name"), str):
            raise InputError(f'line {number}: an agent needs a "name"; nothing was imported')
        if kind != "agent" and (not isinstance(record.get(key), int) or isinstance(record.get(key), bool)):
            raise InputError(f'line {number}: a {kind} needs an integer "id"; nothing was imported')
        if kind == "notebook_entry" and not isinstance(record.get("versions"), list):
            raise InputError(f'line {number}: a notebook entry needs its "versions"; nothing was imported')
        problem = _check_values(record, latest, has_id=kind != "agent")
        if kind == "notebook_entry" and problem is None:
            for version in record["versions"]:
                if not isinstance(version, dict):
                    problem = "a version is not an object"
                    break
                if problem := _check_values(version, latest, has_id=False):
                    problem = f"a version's {problem}"
                    break
        if problem:
            what = f"{kind} {record.get(key)}" if kind != "agent" else f"agent {str(record['name'])[:40]!r}"
            raise InputError(f"line {number}: {what} was refused: {problem}; nothing was imported")
        records.append((number, kind, record))
    if header is None:
        raise InputError("the file is empty: no export header; nothing was imported")
    return header, records


# The fields that hold an id, and those that hold a time, in any record.
_ID_FIELDS = ("id", "fact_id", "supersedes", "superseded_by", "kept_id", "entry_id", "from_id", "to_id")
_TIME_FIELDS = (
    "created_at",
    "valid_from",
    "valid_to",
    "retired_at",
    "restored_at",
    "pinned_at",
    "unpinned_at",
    "done_at",
    "at",
    "changed_at",
    "removed_at",
)


def _check_values(record: dict[str, Any], latest: datetime, *, has_id: bool = True) -> str | None:
    """What is wrong with a record's ids and times, or None: an id is a whole number from 1
    to rules.MAX_ID (as everywhere), a time is an ISO 8601 time with its zone, not later
    than `latest` (now plus a day); no 'infinity', no year 9999."""
    from ..checks.rules import MAX_ID

    for name in _ID_FIELDS:
        value = record.get(name)
        if value is None and (name != "id" or not has_id):
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ID:
            return f"{name} {str(value)[:40]} is not an id (a whole number from 1 to {MAX_ID})"
    for name in _TIME_FIELDS:
        value = record.get(name)
        if value is None:
            continue
        try:
            when = datetime.fromisoformat(value) if isinstance(value, str) and len(value) <= 40 else None
        except ValueError:
            when = None
        if when is None or when.tzinfo is None:
            return f"{name} {str(value)[:40]!r} is not a time with its zone (ISO 8601)"
        if when > latest:
            return f"{name} {value} is in the future"
    return None


@owns_transaction
def import_lines(
    conn: Conn, lines: Iterable[str], *, dry_run: bool = False, embedder: Embedder | None = None
) -> ImportResult:
    """Merge an export into this database in one transaction (rolled back under dry_run).
    Given the query model, the current facts of the file that lack their author's vector
    get it, written as the author (store/vectors.py)."""
    header, records = parse(lines)
    with translated(conn):
        _require_admin(conn, "import")
        migration = _migration(conn)
        if header["migration"] > migration:
            raise InputError(
                f"the file comes from a database at migration {header['migration']}; this one is at {migration}:"
                " run `cli-org init` (it applies pending migrations) with a newer cli-org first"
            )
        result = ImportResult(header["format"], header["migration"], dry_run, [KindCount(k) for k in KINDS])
        with conn.transaction(force_rollback=dry_run):
            _utc(conn)
            _merge(conn, records, {c.kind: c for c in result.kinds})
            if embedder is not None:
                ids = [record["id"] for _, kind, record in records if kind == "fact"]
                store_unembedded(conn, embedder, ids, as_authors=True)
        return result


def _merge(conn: Conn, records: list[tuple[int, str, dict[str, Any]]], counts: dict[str, KindCount]) -> None:
    # The admin writes rows as their authors: row-level security is forced on these tables
    # (it applies to their owner too), and the notebook triggers would stamp new versions
    # and times. Both are lifted inside this transaction only; nobody sees the gap. The cap
    # triggers stay on: an import may not overfill a notebook or a pin scope.
    for table in _TABLES.values():
        conn.execute(pgsql.SQL("ALTER TABLE {} NO FORCE ROW LEVEL SECURITY").format(pgsql.Identifier(table)))
    conn.execute("ALTER TABLE notebook_versions NO FORCE ROW LEVEL SECURITY")
    for table, trigger in _STAMPING_TRIGGERS:
        conn.execute(pgsql.SQL("ALTER TABLE {} DISABLE TRIGGER {}").format(*map(pgsql.Identifier, (table, trigger))))
    by_kind: dict[str, list[tuple[int, dict[str, Any]]]] = {k: [] for k in KINDS}
    for number, kind, record in records:
        by_kind[kind].append((number, record))
    links: list[tuple[int, dict[str, Any]]] = []
    leads: list[tuple[int, dict[str, Any]]] = []
    for kind in KINDS:
        existing = dict(_rows(conn, kind))
        for number, record in by_kind[kind]:
            key = record["name"] if kind == "agent" else record["id"]
            count = counts[kind]
            if key in existing:
                same = _comparable(kind, existing[key]) == _comparable(kind, record)
                if same:
                    count.present += 1
                else:
                    count.conflicting += 1
                    count.conflicts.append(str(key))
                continue
            try:
                with conn.transaction():
                    _insert(conn, kind, record)
            except pgerr.UniqueViolation as exc:
                raise InputError(
                    f"line {number}: {kind} {key} is new here but clashes with an existing row"
                    f" ({(exc.diag.message_primary or '').strip()}); nothing was imported"
                ) from None
            except (
                pgerr.DataError,
                pgerr.IntegrityError,
                pgerr.RaiseException,
                pgerr.ObjectNotInPrerequisiteState,  # a pin cap (migration 0023)
                _Refused,
            ) as exc:
                why = str(exc) if isinstance(exc, _Refused) else exc.diag.message_primary or ""
                raise InputError(
                    f"line {number}: {kind} {key} was refused: {why.strip()}; nothing was imported"
                ) from None
            existing[key] = record
            count.added += 1
            if kind == "fact" and (record.get("supersedes") or record.get("superseded_by")):
                links.append((number, record))
            if kind == "agent" and record.get("team_lead"):
                leads.append((number, record))
        if kind == "agent":
            for number, record in leads:
                try:
                    with conn.transaction():
                        conn.execute(
                            "UPDATE org_agents SET team_lead = %s WHERE name = %s",
                            (record["team_lead"], record["name"]),
                        )
                except pgerr.IntegrityError:
                    raise InputError(
                        f"line {number}: agent {record['name']} has an unknown team lead {record['team_lead']!r};"
                        " nothing was imported"
                    ) from None
        if kind == "fact":
            for number, record in links:
                try:
                    with conn.transaction():
                        conn.execute(
                            "UPDATE memory_facts SET supersedes = %s, superseded_by = %s WHERE id = %s",
                            (record.get("supersedes"), record.get("superseded_by"), record["id"]),
                        )
                except pgerr.IntegrityError as exc:
                    raise InputError(
                        f"line {number}: fact {record['id']} links to a missing fact"
                        f" ({(exc.diag.message_primary or '').strip()}); nothing was imported"
                    ) from None
    for table in _TABLES.values():
        conn.execute(
            pgsql.SQL(
                "SELECT setval(pg_get_serial_sequence({t}, 'id'), coalesce(max(id), 0) + 1, false) FROM {i}"
            ).format(t=pgsql.Literal(table), i=pgsql.Identifier(table))
        )
    for table, trigger in _STAMPING_TRIGGERS:
        conn.execute(pgsql.SQL("ALTER TABLE {} ENABLE TRIGGER {}").format(*map(pgsql.Identifier, (table, trigger))))
    conn.execute("ALTER TABLE notebook_versions FORCE ROW LEVEL SECURITY")
    for table in _TABLES.values():
        conn.execute(pgsql.SQL("ALTER TABLE {} FORCE ROW LEVEL SECURITY").format(pgsql.Identifier(table)))


# The triggers that stamp what an import brings itself: the notebook's versions and times
# (migration 0013; not notebook_entries_cap, migration 0023, which keeps the store's total),
# and a restore's retirement harness, which a live restore copies from the fact (migration
# 0032) but an imported fact holds its last retirement's, not the one that restore undid.
_STAMPING_TRIGGERS = (
    ("notebook_entries", "notebook_entries_before"),
    ("notebook_entries", "notebook_entries_after"),
    ("memory_restores", "memory_restores_via"),
)


def _comparable(kind: str, row: dict[str, Any]) -> dict[str, Any]:
    # An agent is the same agent when its kind, lead and owner flag agree: its role is named
    # after its database, and `init --owner` gives the first owner this database's time.
    skip = ("kind", "role_name", "created_at") if kind == "agent" else ("kind",)
    if kind == "fact":
        row = {"source_hash": None, **row}  # a file from before migration 0042 has none
    return {k: v for k, v in row.items() if k not in skip}


_INSERT_COLUMNS: dict[str, list[str]] = {
    "restore": [
        "id",
        "fact_id",
        "retired_at",
        "retired_by",
        "retired_reason",
        "superseded_by",
        "restored_at",
        "restored_by",
        "why",
        "retired_via",
        "restored_via",
    ],
    "pin": [
        "id",
        "fact_id",
        "project",
        "pinned_by",
        "pinned_at",
        "unpinned_by",
        "unpinned_at",
        "unpin_reason",
        "pinned_via",
        "unpinned_via",
    ],
    "todo": ["id", "text", "project", "author", "created_at", "done_by", "done_at", "via", "done_via"],
    "tidy": ["id", "at", "actor", "action", "fact_id", "kept_id", "evidence"],
    "link": [
        "id",
        "from_id",
        "kind",
        "to_id",
        "author",
        "reason",
        "via",
        "created_at",
        "removed_by",
        "removed_at",
        "removed_reason",
        "removed_via",
    ],
}
_FACT_INSERT = [
    "id",
    "subject",
    "claim",
    "source",
    "author",
    "project",
    "confidence",
    "kind",
    "via",
    "valid_from",
    "valid_to",
    "retired_by",
    "retired_reason",
    "created_at",
    "retired_via",
    "source_hash",  # 64 hex characters or null: the column's CHECK refuses any other (migration 0042)
]
_ENTRY_COLUMNS = [
    "id",
    "agent",
    "store",
    "body",
    "version",
    "created_at",
    "changed_at",
    "changed_by",
    "removed_at",
    "removed_by",
]
_VERSION_COLUMNS = ["entry_id", "version", "agent", "store", "action", "body", "at", "by", "via"]


def _from_json(conn: Conn, table: str, columns: list[str], record: dict[str, Any], *, identity: bool = True) -> None:
    """INSERT the columns of a JSON record, PostgreSQL converting each value to its column's type."""
    cols = pgsql.SQL(", ").join(pgsql.Identifier(c) for c in columns)
    overriding = pgsql.SQL("OVERRIDING SYSTEM VALUE") if identity else pgsql.SQL("")
    statement = pgsql.SQL("INSERT INTO {t} ({c}) {o} SELECT {c} FROM jsonb_populate_record(NULL::{t}, %s)").format(
        t=pgsql.Identifier(table), c=cols, o=overriding
    )
    conn.execute(statement, (Jsonb(record),))


class _Refused(Exception):
    """A write check refused an imported text."""


# The text fields an import brings, per kind. Each gets the client's fuller scan
# (keys split up or in base64, the injection classifier) as `remember` gives what an agent
# writes; the database's own checks run on insert as well.
_SCANNED = {
    "fact": ("subject", "claim", "source", "project", "via", "retired_reason", "retired_via"),
    "restore": ("why", "retired_reason", "retired_via", "restored_via"),
    "pin": ("project", "unpin_reason", "pinned_via", "unpinned_via"),
    "notebook_entry": ("body",),
    "todo": ("text", "project", "via", "done_via"),
    "tidy": ("evidence",),
    "link": ("reason", "removed_reason", "via", "removed_via"),
}


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _scan(kind: str, record: dict[str, Any]) -> None:
    from ..checks.write import scan_problem

    values = {field: record.get(field) for field in _SCANNED.get(kind, ())}
    if kind == "notebook_entry" and isinstance(record.get("versions"), list):
        values["version body"] = [v.get("body") for v in record["versions"] if isinstance(v, dict)]
    for name, value in values.items():
        for text in _strings(value):
            problem = scan_problem(name, text)
            if problem:
                raise _Refused(problem)


# Each kind's short fields and the rule (rules.FIELD_RULES) a live write holds them to;
# the long texts and their limits. Checked before the scans, so that nothing long is scanned.
_FIELDS: dict[str, dict[str, str]] = {
    "fact": {"source": "source", "project": "project", "via": "via", "retired_reason": "reason", "retired_via": "via"},
    "restore": {"why": "reason", "retired_reason": "reason", "retired_via": "via", "restored_via": "via"},
    "pin": {"project": "project", "unpin_reason": "reason", "pinned_via": "via", "unpinned_via": "via"},
    "notebook_entry": {},
    "todo": {"project": "project", "via": "via", "done_via": "via"},
    "tidy": {},
    "link": {"reason": "reason", "removed_reason": "reason", "via": "via", "removed_via": "via"},
}


def _texts_limits() -> dict[tuple[str, str], int]:
    from ..checks.rules import MAX_CLAIM, MAX_SUBJECT, MAX_TODO, NOTEBOOK_CAPS

    body = max(NOTEBOOK_CAPS.values())
    return {("fact", "subject"): MAX_SUBJECT, ("fact", "claim"): MAX_CLAIM, ("todo", "text"): MAX_TODO,
            ("notebook_entry", "body"): body, ("version", "body"): body}  # fmt: skip


def _check_fields(kind: str, record: dict[str, Any]) -> None:
    """The shape and length rules of a live write, for every short field of the record
    (a harness that is not RUNTIME@HOST, a line break in a one-line field, a long text)."""
    from ..checks.write import check_field

    limits = _texts_limits()
    rows = [(kind, record)]
    if kind == "notebook_entry":
        rows += [("version", v) for v in record.get("versions") or [] if isinstance(v, dict)]
    for where, row in rows:
        for (k, name), longest in limits.items():
            value = row.get(name) if k == where else None
            if value is not None and not isinstance(value, str):
                raise _Refused(f"{name} is not text")
            if value is not None and len(value) > longest:
                raise _Refused(f"{name} is {len(value):,} characters; the limit is {longest:,}")
        fields = {"via": "via"} if where == "version" else _FIELDS.get(where, {})
        for name, rule in fields.items():
            value = row.get(name)
            if value is not None and not isinstance(value, str):
                raise _Refused(f"{name} is not text")
            try:
                check_field(rule, value, name, scan=False)  # scanned with the record's texts (_scan)
            except InputError as exc:
                raise _Refused(str(exc)) from None


def _check_who(conn: Conn, kind: str, record: dict[str, Any]) -> None:
    """The "who may" rule of a live write (org_may_retire, migration 0001: the author, their
    team lead, or an owner) for every name an import brings as the one who acted on another's
    row: who retired a fact, restored it, pinned or unpinned it, marked a todo done, removed a
    link. The agents of the file are in by now (they come first)."""
    acts: list[tuple[str, Any]] = []
    if kind == "fact":
        author, what = record.get("author"), f"fact {record['id']}"
        acts = [("retire", record.get("retired_by"))]
    elif kind in ("pin", "restore"):
        row = conn.execute("SELECT author FROM memory_facts WHERE id = %s", (record.get("fact_id"),)).fetchone()
        if row is None:
            return  # the foreign key refuses it on insert
        author, what = row["author"], f"fact {record.get('fact_id')}"
        acts = [("pin", record.get("pinned_by")), ("unpin", record.get("unpinned_by"))]
        if kind == "restore":
            acts = [("restore", record.get("restored_by")), ("retire", record.get("retired_by"))]
    elif kind == "todo":
        author, what = record.get("author"), f"todo {record['id']}"
        acts = [("mark done", record.get("done_by"))]
    elif kind == "link":
        _check_link_ends(conn, record)
        author, what = record.get("author"), f"link {record['id']}"
        acts = [("remove", record.get("removed_by"))]
    for verb, who in acts:
        if who is None:
            continue
        if not isinstance(who, str) or not isinstance(author, str):
            raise _Refused(f"the agent who may {verb} {what} is not named by text")
        if not first(conn, "SELECT public.org_may_retire(%s, %s) AS ok", (who, author))["ok"]:
            act = f"mark {what} done" if verb == "mark done" else f"{verb} {what}"
            raise _Refused(f"agent {who} may not {act}: only its author ({author}), their team lead, or an owner may")


def _check_link_ends(conn: Conn, record: dict[str, Any]) -> None:
    """A link joins facts that are here (the file's facts are in by now) and is written by an
    agent that is here: no link between facts that do not exist, none in a stranger's name."""
    for end in ("from_id", "to_id"):
        fact = record.get(end)
        if fact is None:
            continue  # from_id: an agent's own confirmation (the table's checks hold it to `confirms`)
        if conn.execute("SELECT id FROM memory_facts WHERE id = %s", (fact,)).fetchone() is None:
            raise _Refused(f"{end} {fact} is no fact, in the file or here")
    author = record.get("author")
    known = isinstance(author, str) and conn.execute("SELECT 1 FROM org_agents WHERE name = %s", (author,)).fetchone()
    if not known:
        raise _Refused(f"its author {str(author)[:40]!r} is no agent, in the file or here")


def _insert(conn: Conn, kind: str, record: dict[str, Any]) -> None:
    _check_fields(kind, record)
    _scan(kind, record)
    _check_who(conn, kind, record)
    if kind == "agent":
        _add_agent(conn, record)
    elif kind == "fact":
        row = {**record, "kind": record.get("fact_kind")}
        _from_json(conn, "memory_facts", _FACT_INSERT, row)
    elif kind == "link":
        _from_json(conn, "memory_links", _INSERT_COLUMNS[kind], {**record, "kind": record.get("link_kind")})
    elif kind == "notebook_entry":
        _check_text(conn, record.get("body"))
        _from_json(conn, "notebook_entries", _ENTRY_COLUMNS, record)
        for version in record["versions"]:
            if not isinstance(version, dict):
                raise _Refused("a version is not an object")
            _check_text(conn, version.get("body"))
            _from_json(
                conn, "notebook_versions", _VERSION_COLUMNS, {**version, "entry_id": record["id"]}, identity=False
            )
    else:
        _from_json(conn, _TABLES[kind], _INSERT_COLUMNS[kind], record)


def _check_text(conn: Conn, body: Any) -> None:
    """The write checks the notebook trigger runs (it is off while entries are imported)."""
    if not isinstance(body, str):
        return  # the NOT NULL constraint refuses it
    checked = body.replace("\n", " ")
    problem = first(
        conn,
        "SELECT coalesce(org_write_problem('entry', %(t)s, false), org_write_scan(ARRAY['entry'], ARRAY[%(t)s])) AS p",
        {"t": checked},
    )["p"]
    if problem:
        raise _Refused(problem)


def _add_agent(conn: Conn, record: dict[str, Any]) -> None:
    """A new agent: a role without a login in the member group (named as `agents add` names it)."""
    from ..checks.rules import AGENT_NAME
    from .agents import check_agent_role, let_the_admin_become, role_for

    name = record["name"]
    if not AGENT_NAME.match(name):
        raise InputError(f"agent name {name!r} is not a valid agent name")
    role = role_for(conn, name)
    try:
        check_agent_role(conn, role, name)
    except InputError as exc:
        raise _Refused(str(exc)) from None
    if not first(conn, "SELECT count(*) > 0 AS found FROM pg_roles WHERE rolname = %s", (role,))["found"]:
        conn.execute(pgsql.SQL("CREATE ROLE {} NOLOGIN").format(pgsql.Identifier(role)))
    group = first(conn, "SELECT org_member_role() AS name")["name"]
    conn.execute(pgsql.SQL("GRANT {} TO {}").format(pgsql.Identifier(group), pgsql.Identifier(role)))
    let_the_admin_become(conn, role)  # as `agents add` does: a team server's admin is no superuser
    conn.execute(
        "INSERT INTO org_agents (name, kind, is_owner, role_name, created_at) VALUES (%s, %s, %s, %s, %s)",
        (name, record.get("agent_kind") or "bot", bool(record.get("is_owner")), role, record.get("created_at")),
    )
