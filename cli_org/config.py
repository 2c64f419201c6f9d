"""Settings read from the environment and an optional .env file."""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from .errors import ConfigError
from .limits import LOCK_WAIT, STATEMENT_TIMEOUT
from .local.places import data_dir_from
from .shaping import (
    ANSWER_SHAPING,
    FACT_SHAPING,
    HOOK_SHAPING,
    SHAPING,
    AnswerShaping,
    FactShaping,
    HookShaping,
    VaultShaping,
)
from .text import is_utf8, shown

# A plain dataclass rather than a validation library: a cold `cli-org search` has about
# half a second in all, and importing one cost a fifth of it.

_DB_NAME = re.compile(r"^[a-z][a-z0-9_]{0,40}$")


def _default_data_dir() -> Path:
    return data_dir_from(os.environ)


def _float(env: dict[str, str], key: str, default: float) -> float:
    raw = env.get(key)
    try:
        return float(raw) if raw else default
    except ValueError:
        raise ConfigError(f"{key} must be a number, not {raw!r}") from None


def _seconds(env: dict[str, str], key: str, default: float) -> float:
    value = _float(env, key, default)
    if not 0 < value <= 86400:
        raise ConfigError(f"{key} must be a number of seconds above 0 and at most 86400, not {env.get(key)!r}")
    return value


def _list(raw: str | None) -> list[str]:
    return [p.strip() for p in (raw or "").split(",") if p.strip()]


@dataclass
class Settings:
    """Everything cli-org reads from the environment, validated once."""

    database_url: str | None = None
    # Where reads may go (a streaming replica): recall, search, context and the MCP server's
    # read tools. Writes always go to database_url (or the embedded server). docs/operations.md "Read replicas".
    read_url: str | None = None
    database_name: str = "org"
    data_dir: Path = field(default_factory=_default_data_dir)
    agent: str | None = None
    via: str | None = None
    vault: Path | None = None
    vault_ignore: list[str] = field(default_factory=list)
    root: str | None = None
    recall_exclude: list[str] = field(default_factory=list)
    vault_shaping: VaultShaping = SHAPING  # its floors from ORG_RECALL_*_SIMILARITY
    fact_shaping: FactShaping = FACT_SHAPING  # the semantic fact pass; benchmarks pass variants
    answer_shaping: AnswerShaping = ANSWER_SHAPING  # the merged answer's order and cut-off
    hook_shaping: HookShaping = HOOK_SHAPING  # the prompt hook's own bar
    statement_timeout: float = STATEMENT_TIMEOUT  # seconds; see limits.py
    lock_wait: float = LOCK_WAIT  # seconds
    # Seconds a connection attempt may take (libpq's connect_timeout) where the user set none
    # (in the URL or PGCONNECT_TIMEOUT); None: libpq's own. The hook bounds its own (hooks.py).
    connect_timeout: int | None = None
    # `cli-org serve`: the token every request must carry; required to serve on a
    # non-loopback address (cli_org/faces/web/guard.py).
    web_token: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.database_url:
            check_database_url(self.database_url)
        if self.read_url:
            check_database_url(self.read_url, "CLI_ORG_READ_URL")
        if not _DB_NAME.match(self.database_name):
            raise ConfigError(
                f"CLI_ORG_DATABASE {self.database_name!r}: use lowercase letters, digits and '_', "
                "starting with a letter"
            )

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        if env is None:
            load_dotenv()
            env = dict(os.environ)
        for key, value in env.items():
            # Bytes that are not UTF-8 become lone surrogates, which no query can send.
            if key.startswith(("ORG_", "CLI_ORG_")) and not is_utf8(value):
                raise ConfigError(f'{key} is not valid UTF-8: "{shown(value)}"')
        return cls(
            database_url=env.get("CLI_ORG_DATABASE_URL") or None,
            read_url=env.get("CLI_ORG_READ_URL") or None,
            database_name=env.get("CLI_ORG_DATABASE") or "org",
            data_dir=data_dir_from(env),
            agent=env.get("ORG_AGENT") or None,
            via=env.get("ORG_VIA") or None,
            vault=Path(env["ORG_VAULT"]).expanduser() if env.get("ORG_VAULT") else None,
            vault_ignore=_list(env.get("ORG_VAULT_IGNORE")),
            root=env.get("ORG_ROOT") or None,
            recall_exclude=_list(env.get("ORG_RECALL_EXCLUDE")),
            vault_shaping=replace(
                SHAPING,
                min_similarity=_float(env, "ORG_RECALL_MIN_SIMILARITY", SHAPING.min_similarity),
                keyword_similarity=_float(env, "ORG_RECALL_KEYWORD_SIMILARITY", SHAPING.keyword_similarity),
            ),
            statement_timeout=_seconds(env, "CLI_ORG_STATEMENT_TIMEOUT", STATEMENT_TIMEOUT),
            lock_wait=_seconds(env, "CLI_ORG_LOCK_WAIT", LOCK_WAIT),
            web_token=env.get("CLI_ORG_WEB_TOKEN") or None,
        )

    @property
    def embedded(self) -> bool:
        return self.database_url is None


def check_database_url(url: str, name: str = "CLI_ORG_DATABASE_URL") -> None:
    """Refuse a CLI_ORG_DATABASE_URL (or CLI_ORG_READ_URL) that libpq cannot parse, in one line that never shows
    the URL itself (it may hold a password). Checked when settings are made, so every
    command (db status and init included) says the same before it connects."""
    from psycopg import ProgrammingError
    from psycopg.conninfo import conninfo_to_dict

    try:
        params = conninfo_to_dict(url)
    except ProgrammingError as exc:
        reason = (str(exc).strip().splitlines() or ["cannot be parsed"])[0].replace(url, "...")
        raise ConfigError(
            f"{name} is not a valid connection string ({reason}); "
            "use postgresql://USER@HOST:PORT/DATABASE or 'host=... dbname=...'"
        ) from None
    ports = [p.strip() for p in str(params.get("port") or "").split(",") if p.strip()]
    bad = [p for p in ports if not p.isdigit()]
    if bad:
        raise ConfigError(f"{name}: port {bad[0]!r} is not a number")


# A checkout must not choose the database. A repository's `.env`
# could point the CLI, the hooks and the MCP server at another server (whose text is then
# put into the session), pick the identity, or move where files are read and written. So
# from a `.env` cli-org takes only the settings below, which change how it answers but
# not where it connects, who it is, or which files and servers it uses. Everything that
# does (CLI_ORG_DATABASE_URL, CLI_ORG_READ_URL, CLI_ORG_DATABASE, CLI_ORG_DATA_DIR,
# CLI_ORG_WARM_DIR, CLI_ORG_WEB_TOKEN, ORG_AGENT, ORG_AGENT_PASSWORD, ORG_VAULT, ORG_ROOT,
# and any ORG_*/CLI_ORG_* setting added later until it is judged harmless here) is ignored
# with a warning naming it: ignored, not refused, so that no repository can stop cli-org
# (and the hooks) from working in its folder. Any other variable (libpq's PG*, PATH,
# PYTHONPATH, XDG_DATA_HOME, CODEX_HOME...) is the project's own and is not loaded at all.
# A checkout's .env is read by every command and hook in its folder: a 50 MB one cost 6-7 s
# a command (read whole). Nine short settings fit in far less.
DOTENV_MAX_BYTES = 64 * 1024
DOTENV_TAKEN = frozenset(
    {
        "ORG_VIA",
        "ORG_VAULT_IGNORE",
        "ORG_RECALL_EXCLUDE",
        "ORG_RECALL_MIN_SIMILARITY",
        "ORG_RECALL_KEYWORD_SIMILARITY",
        "CLI_ORG_STATEMENT_TIMEOUT",
        "CLI_ORG_LOCK_WAIT",
        "CLI_ORG_WARM",
        "CLI_ORG_WARM_IDLE",
    }
)


# What a checkout's .env may set each number to; a value outside (or not a number) is
# ignored with one warning and the default stands, as for a setting .env may not make: a
# `CLI_ORG_STATEMENT_TIMEOUT=999999999` there stopped every command in that folder (issue
# 33), and a day-long wait would hold the prompt hook. The environment keeps the wider
# bounds of Settings (a second to a day).
DOTENV_BOUNDS: dict[str, tuple[float, float, bool]] = {  # low, high, low allowed
    "CLI_ORG_STATEMENT_TIMEOUT": (0, 300, False),
    "CLI_ORG_LOCK_WAIT": (0, 300, False),
    "CLI_ORG_WARM_IDLE": (0, 86400, False),
    "ORG_RECALL_MIN_SIMILARITY": (0, 1, True),
    "ORG_RECALL_KEYWORD_SIMILARITY": (0, 1, True),
}


def _dotenv_number_problem(key: str, value: str) -> str | None:
    low, high, low_ok = DOTENV_BOUNDS[key]
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not (low <= number <= high) or (number == low and not low_ok):
        above = f"{'at least' if low_ok else 'above'} {low:g} and at most {high:g}"
        return f"{key}={value[:40]!r} in .env is ignored: a folder's .env may set it to a number {above}"
    return None


def dotenv_settings(path: str = ".env") -> tuple[dict[str, str], list[str]]:
    """The settings cli-org takes from the .env file at `path` (none when there is no such
    regular file), and one warning for each setting it holds that is ignored (one .env may
    not make, or a number outside DOTENV_BOUNDS)."""
    if not Path(path).is_file():
        return {}, []
    if Path(path).stat().st_size > DOTENV_MAX_BYTES:
        return {}, [f".env is ignored: over {DOTENV_MAX_BYTES // 1024} KiB (no settings file is that long)"]
    from dotenv import dotenv_values

    taken: dict[str, str] = {}
    ignored: list[str] = []
    for key, value in dotenv_values(path).items():
        if key in DOTENV_TAKEN:
            if value is None:
                continue
            problem = _dotenv_number_problem(key, value) if key in DOTENV_BOUNDS else None
            if problem:
                ignored.append(problem)
            else:
                taken[key] = value
        elif key.startswith(("ORG_", "CLI_ORG_")):
            ignored.append(
                f"{key} in .env is ignored: a folder's .env may not choose the database, "
                "the identity or the files cli-org uses; set it in the environment"
            )
    return taken, ignored


def load_dotenv() -> list[str]:
    """Put the current folder's .env into the environment, only the settings in
    DOTENV_TAKEN within their bounds; values already set win. Returns one warning for each
    setting ignored, for the caller to print.

    Only the current folder's .env: a parent's file belongs to another project."""
    taken, ignored = dotenv_settings()
    for key, value in taken.items():
        os.environ.setdefault(key, value)
    return ignored
