"""A crafted export (issue 33, findings 3 and 4): every field of an imported record passes the
shape rules and the "who may" rules of a live write, and odd values (ids below 1, times in the
far future, a line of megabytes) are refused at once. The docs promise that a crafted file
brings in nothing an agent could not write."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_org.errors import InputError
from cli_org.store import facts, pins, todos
from cli_org.store.transfer import export_lines, import_lines

pytestmark = pytest.mark.attack("files")

WORKTREE = Path(__file__).resolve().parents[1]
VIA = "claude-code@box"


def _lines(org) -> list[str]:
    with org.admin() as conn:
        return export_lines(conn)[0]


def _record(lines: list[str], kind: str) -> dict:
    return json.loads(next(line for line in lines if f'"kind": "{kind}"' in line))


def _refused(org, lines: list[str], record: dict, match: str) -> None:
    with org.admin() as conn, pytest.raises(InputError, match=match):
        import_lines(conn, [lines[0], json.dumps(record)])


def _count(org, table: str, id_: int) -> int:
    with org.admin() as conn:
        return conn.execute(f"SELECT count(*) AS n FROM {table} WHERE id = %s", (id_,)).fetchone()["n"]


@pytest.fixture
def exported(org):
    """An export holding one retired fact, one pin, one done todo, all bot's."""
    with org.as_agent("bot") as conn:
        gone = facts.remember(conn, "deploy", "Deploys run on Fridays", source="docs/ops.md").id
        facts.forget(conn, gone, "no longer true", via=VIA)
        kept = facts.remember(conn, "auth", "Tokens live one hour", source="docs/auth.md").id
        pins.pin(conn, kept, via=VIA)
        todo = todos.add_todo(conn, "Migrate the auth tests", via=VIA).id
        todos.done_todo(conn, todo, via=VIA)
    return _lines(org)


@pytest.mark.slow
def test_a_retired_via_with_a_newline_is_refused_and_activity_prints_no_forged_line(org, exported, cli):
    fact = _record(exported, "fact")
    fact.update(id=900, retired_via="evil\n2026-01-01 boss forgot fact 1 via root@box")
    _refused(org, exported, fact, "line 2: fact 900 was refused: .*runtime@host")
    assert _count(org, "memory_facts", 900) == 0
    code, out, err = cli("activity", "--since", "all")
    assert code == 0 and "evil" not in out and "root@box" not in out, (out, err)


@pytest.mark.slow
def test_a_done_via_that_is_no_harness_is_refused(org, exported):
    todo = _record(exported, "todo")
    todo.update(id=901, done_via="<script>@x")
    _refused(org, exported, todo, "line 2: todo 901 was refused: .*runtime@host")
    assert _count(org, "org_todos", 901) == 0


@pytest.mark.slow
@pytest.mark.parametrize("field", ["pinned_via", "unpinned_via"])
def test_a_pin_harness_that_is_no_harness_is_refused(org, exported, field):
    pin = _record(exported, "pin")
    pin.update({"id": 902, field: "a b@c", "unpinned_at": "2026-01-02T00:00:00+00:00", "unpinned_by": "bot"})
    with org.admin() as conn:  # the live pin is on that fact: take it off so only the harness is wrong
        conn.execute("DELETE FROM memory_pins")
        conn.commit()
    _refused(org, exported, pin, "line 2: pin 902 was refused: .*runtime@host")


@pytest.mark.slow
def test_a_pin_by_an_agent_who_may_not_pin_is_refused(org, exported):
    pin = _record(exported, "pin")
    with org.admin() as conn:
        conn.execute("DELETE FROM memory_pins")
        conn.commit()
    pin.update(id=903, pinned_by="other")  # not bot's lead, not an owner
    _refused(org, exported, pin, "line 2: pin 903 was refused: .*other may not pin")
    assert _count(org, "memory_pins", 903) == 0


@pytest.mark.slow
def test_an_unpin_by_an_agent_who_may_not_unpin_is_refused(org, exported):
    pin = _record(exported, "pin")
    with org.admin() as conn:
        conn.execute("DELETE FROM memory_pins")
        conn.commit()
    pin.update(id=904, unpinned_by="other", unpinned_at="2026-01-02T00:00:00+00:00", unpin_reason="unpinned")
    _refused(org, exported, pin, "line 2: pin 904 was refused: .*other may not unpin")


@pytest.mark.slow
def test_a_pin_of_a_fact_that_is_not_there_is_one_line_not_a_crash(org, exported):
    # the rights check looked its fact up with `first`, which raises on no row: a LookupError
    pin = _record(exported, "pin")
    pin.update(id=905, fact_id=999999)
    _refused(org, exported, pin, "line 2: pin 905 was refused: .*memory_pins_fact_id_fkey")
    assert _count(org, "memory_pins", 905) == 0


@pytest.mark.slow
def test_a_todo_done_by_an_agent_who_may_not_finish_it_is_refused(org, exported):
    todo = _record(exported, "todo")
    todo.update(id=905, done_by="other")
    _refused(org, exported, todo, "line 2: todo 905 was refused: .*other may not mark")
    assert _count(org, "org_todos", 905) == 0


@pytest.mark.slow
@pytest.mark.attack(None)  # the control: the same records by who may are imported
def test_the_lead_and_an_owner_may(org, exported):
    pin = _record(exported, "pin")
    todo = _record(exported, "todo")
    with org.admin() as conn:
        conn.execute("DELETE FROM memory_pins")
        conn.commit()
    pin.update(id=906, pinned_by="lead")
    todo.update(id=907, done_by="boss")
    with org.admin() as conn:
        import_lines(conn, [exported[0], json.dumps(pin), json.dumps(todo)])
    assert _count(org, "memory_pins", 906) == 1 and _count(org, "org_todos", 907) == 1


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["fact", "todo", "pin"])
def test_an_id_below_one_is_refused(org, exported, kind):
    record = _record(exported, kind)
    record["id"] = -5
    _refused(org, exported, record, "line 2: .*id")


@pytest.mark.slow
@pytest.mark.parametrize("field", ["created_at", "valid_from"])
def test_a_time_in_the_far_future_is_refused(org, exported, field):
    fact = _record(exported, "fact")
    fact.update({"id": 908, field: "9999-01-01T00:00:00+00:00"})
    _refused(org, exported, fact, f"line 2: .*{field}")
    assert _count(org, "memory_facts", 908) == 0


@pytest.mark.slow
def test_a_time_that_is_infinity_is_refused(org, exported):
    todo = _record(exported, "todo")
    todo.update(id=909, created_at="infinity")
    _refused(org, exported, todo, "line 2: .*created_at")


@pytest.mark.slow
def test_a_line_of_ten_megabytes_is_refused_at_once(org, exported, tmp_path):
    fact = _record(exported, "fact")
    fact.update(id=910, claim="word " * (2 << 20))
    path = tmp_path / "big.jsonl"
    path.write_text(exported[0] + "\n" + json.dumps(fact) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("ORG_AGENT", "ORG_VIA")}
    env |= {**org.env, "PYTHONPATH": str(WORKTREE)}
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "cli_org", "import", str(path)],
            cwd=WORKTREE,
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("a 10 MB line ran past 30 s")
    took = time.monotonic() - started
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "line 2" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    # The whole command (Python's start, the connection) in a few seconds; the line itself
    # is refused before it is parsed (the unit test below times that part alone).
    assert took < 10, took


@pytest.mark.attack(None)  # the part of the line bound that needs no database
def test_the_line_bound_is_checked_before_parsing():
    from cli_org.store.transfer import FORMAT, parse

    header = json.dumps({"kind": "header", "format": FORMAT, "migration": 1})
    big = json.dumps({"kind": "fact", "id": 1, "claim": "x" * (10 << 20)})
    started = time.monotonic()
    with pytest.raises(InputError, match="line 2: .*longer than"):
        parse([header, big])
    assert time.monotonic() - started < 0.5
