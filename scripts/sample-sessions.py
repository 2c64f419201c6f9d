"""Lay out the demo's sample sessions (eval/sample/sessions) as each harness keeps them.

    python3 scripts/sample-sessions.py OUT

writes OUT/claude (Claude Code's projects folder), OUT/codex (Codex's sessions folder) and
OUT/hermes/state.db (made from state.sql), for `cli-org archive import --claude OUT/claude
--codex OUT/codex --hermes OUT/hermes`. Every time in them is moved by the same amount, so
that the last message was an hour ago: the Usage page's window (30 days by default) always
holds the sample. Only the standard library: it runs before cli-org is on the path.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[1] / "eval" / "sample" / "sessions"
# The last sample message lands this long before the demo runs (a session of a moment ago
# would look like one still going).
LAST_MESSAGE_AGO = timedelta(hours=1)


def _parse(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _format(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _jsonl_times(record: dict) -> list[dict]:
    """The objects of one line that carry a `timestamp` (Codex repeats it in session_meta)."""
    holders = [record]
    payload = record.get("payload")
    if isinstance(payload, dict) and "timestamp" in payload:
        holders.append(payload)
    return holders


def _latest() -> datetime:
    times = []
    for path in sorted(SAMPLE.glob("*/**/*.jsonl")):
        for record in _records(path):
            times += [_parse(h["timestamp"]) for h in _jsonl_times(record) if isinstance(h.get("timestamp"), str)]
    db = sqlite3.connect(":memory:")
    db.executescript((SAMPLE / "hermes" / "state.sql").read_text(encoding="utf-8"))
    (last,) = db.execute("SELECT max(timestamp) FROM messages").fetchone()
    db.close()
    times.append(datetime.fromtimestamp(last, tz=UTC))
    return max(times)


def lay_out(out: Path, now: datetime | None = None) -> dict[str, Path]:
    """Write the three harnesses' stores under `out`; their paths by harness."""
    shift = (now or datetime.now(UTC)) - LAST_MESSAGE_AGO - _latest()
    for harness in ("claude", "codex"):
        for path in sorted((SAMPLE / harness).glob("**/*.jsonl")):
            records = _records(path)
            for record in records:
                for holder in _jsonl_times(record):
                    if isinstance(holder.get("timestamp"), str):
                        holder["timestamp"] = _format(_parse(holder["timestamp"]) + shift)
            relative = path.relative_to(SAMPLE / harness)
            if harness == "codex":
                # rollout-<time>-<session id>.jsonl in sessions/YYYY/MM/DD: named for its start.
                start = _parse(records[0]["timestamp"])
                relative = Path(f"{start:%Y/%m/%d}") / f"rollout-{start:%Y-%m-%dT%H-%M-%S}-{path.stem[-36:]}.jsonl"
            target = out / harness / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    hermes = out / "hermes"
    if hermes.exists():
        shutil.rmtree(hermes)
    hermes.mkdir(parents=True)
    db = sqlite3.connect(hermes / "state.db")
    with db:
        db.executescript((SAMPLE / "hermes" / "state.sql").read_text(encoding="utf-8"))
        seconds = shift.total_seconds()
        db.execute("UPDATE messages SET timestamp = timestamp + ?", (seconds,))
        db.execute("UPDATE sessions SET started_at = started_at + ?, ended_at = ended_at + ?", (seconds, seconds))
    db.close()
    return {"claude": out / "claude", "codex": out / "codex", "hermes": hermes}


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        print(
            __doc__.strip() if sys.argv[1:] in (["-h"], ["--help"]) else "usage: python3 scripts/sample-sessions.py OUT"
        )
        sys.exit(0 if sys.argv[1:] in (["-h"], ["--help"]) else 2)
    for harness, path in lay_out(Path(sys.argv[1])).items():
        print(f"{harness}\t{path}")
