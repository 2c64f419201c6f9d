"""The database stopped in the middle of a command: `pg_ctl stop -m immediate` on a private
embedded server while a long `vault scan` or `archive import` runs. The command must end
with one clear line and a non-zero exit, and leave nothing half-written (the orphan checks
of stress/kills.py); started again, it completes.

    python -m stress.stopped [--after 1.5] [--vault DIR] [--transcripts DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import psycopg
from psycopg.rows import dict_row

from cli_org.config import Settings
from cli_org.db import embedded
from cli_org.db.connect import admin_conninfo
from cli_org.store.bootstrap import init

from .kills import ROOT, cli, commands, finish, orphans, signature


def stop_now(data_dir: Path) -> None:
    """Stop the embedded server at once, as a crash or an operator would (no shutdown
    checkpoint; the next start recovers from the write-ahead log)."""
    embedded._pg("pg_ctl", "-w", "-m", "immediate", "stop", pgdata=embedded.pgdata_path(data_dir))


def stopped_during(data_dir: Path, args: list[str], after: float, rerun: bool = True) -> dict:
    """Run `cli-org ARGS` against the private server in data_dir, stop the server `after`
    seconds after its first query, and report how the command ended and what it left."""
    env = {"CLI_ORG_DATA_DIR": str(data_dir), "CLI_ORG_DATABASE": "stopped", "CLI_ORG_DATABASE_URL": ""}
    settings = Settings.from_env(env)
    init(settings, "boss")
    proc = cli(env, args)
    with psycopg.connect(admin_conninfo(settings), autocommit=True) as watch:
        # Wait until the command is at work in the database (not still starting Python).
        while (
            proc.poll() is None
            and not watch.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() "
                "AND state IN ('active', 'idle in transaction')"
            ).fetchone()[0]
        ):
            time.sleep(0.02)
    time.sleep(after)
    still_running = proc.poll() is None
    stop_now(data_dir)
    stopped_at = time.perf_counter()
    out, err = proc.communicate(timeout=120)
    ended_s = time.perf_counter() - stopped_at
    lines = err.decode(errors="replace").splitlines()
    embedded.ensure_running(data_dir)  # started again: crash recovery
    with psycopg.connect(admin_conninfo(settings), row_factory=dict_row) as conn:
        left = orphans(conn)
        partial = signature(conn)
    rerun_s, whole, after_rerun = 0.0, partial, left
    if rerun:
        rerun_s = finish(env, args)
        with psycopg.connect(admin_conninfo(settings), row_factory=dict_row) as conn:
            whole = signature(conn)
            after_rerun = orphans(conn)
    return {
        "command": " ".join(args[:2]),
        "running_when_stopped": still_running,
        "exit_code": proc.returncode,
        "stderr_lines": len(lines),
        "stderr": lines[-3:],
        "traceback": "Traceback" in err.decode(errors="replace"),
        "ended_s_after_stop": round(ended_s, 2),
        "orphans": left,
        "rows_before_rerun": {k: v["n"] for k, v in partial.items() if v["n"]},
        "rows_after_rerun": {k: v["n"] for k, v in whole.items() if v["n"]},
        "orphans_after_rerun": after_rerun,
        "rerun_s": round(rerun_s, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--after", type=float, default=0.5, help="seconds after its first query")
    parser.add_argument("--vault", type=Path, default=ROOT.parent / "shared" / "corpora" / "til")
    parser.add_argument("--transcripts", type=Path, default=ROOT.parent / "shared" / "corpora" / "transcripts")
    args = parser.parse_args()
    cmds = commands(args.vault, args.transcripts)
    out = []
    for op in ("scan", "import"):
        with tempfile.TemporaryDirectory(prefix="cli-org-stopped-") as tmp:
            try:
                out.append(stopped_during(Path(tmp), cmds[op], args.after))
            finally:
                embedded.stop(Path(tmp))
    print(json.dumps(out, indent=2))
    bad = [
        o for o in out if o["exit_code"] == 0 or o["stderr_lines"] != 1 or o["traceback"] or any(o["orphans"].values())
    ]
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
