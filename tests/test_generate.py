"""scripts/generate.py: one command rewrites every generated file, and `--check` (run by CI)
fails naming each stale one."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _generate():
    spec = importlib.util.spec_from_file_location("generate", ROOT / "scripts" / "generate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_generated_file_is_up_to_date(capsys):
    generate = _generate()
    assert generate.main(["--check"]) == 0, capsys.readouterr().err
    names = {path.relative_to(ROOT).as_posix() for path, _ in generate.outputs()}
    assert names == {
        "cli_org/migrations/repeatable/write_checks.sql",
        "cli_org/checks/needs_table.py",
        "cli_org/migrations/repeatable/rule_checks.sql",
        "cli_org/faces/mcp/manifest.py",
        "docs/commands.md",
        "docs/registry.md",
    }


def test_each_real_generated_file_edited_by_hand_is_stale():
    """Not only the mechanism (below): every real entry rewrites what its source does not say
    (an entry that handed back the file as it found it would never be stale). The edits are at
    the end, in the generated part (docs/commands.md keeps a hand-written head)."""
    for path, wanted in _generate().outputs():
        current = path.read_text(encoding="utf-8")
        for edited in (current + "a line added by hand\n", current.rstrip("\n") + " edited\n"):
            assert wanted(edited) != edited, path


def test_check_names_each_stale_file_and_writing_makes_it_fresh(tmp_path, monkeypatch, capsys):
    generate = _generate()
    monkeypatch.setattr(generate, "ROOT", tmp_path)
    fresh, stale, missing = tmp_path / "fresh.sql", tmp_path / "stale.sql", tmp_path / "missing.md"
    fresh.write_text("same\n")
    stale.write_text("old\n")
    monkeypatch.setattr(
        generate,
        "outputs",
        lambda: [(fresh, lambda _: "same\n"), (stale, lambda _: "new\n"), (missing, lambda current: "made\n")],
    )
    assert generate.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "stale.sql is stale: run python scripts/generate.py",
        "missing.md is stale: run python scripts/generate.py",
    ]
    assert stale.read_text() == "old\n" and not missing.exists()  # a check writes nothing
    assert generate.main([]) == 0
    assert stale.read_text() == "new\n" and missing.read_text() == "made\n"
    assert generate.main(["--check"]) == 0
