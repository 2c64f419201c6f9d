"""The cli-org command line: parse, call one library function, render.

The entry point is light on purpose: `recall` and `context` first ask the warm helper
(cli_org/faces/warm), and only when it does not answer do click and the commands load
(cli_org/faces/cli/app.py). `from cli_org.faces.cli import cli` still gives the command group.
"""

from __future__ import annotations

import sys


def main() -> None:
    from ..warm.client import answer_command, environment

    argv = sys.argv[1:]
    code = answer_command(argv)
    if code is not None:
        sys.exit(code)
    if needs_model(argv):
        from ...local.places import data_dir_from
        from ...vault.embedders import model_file, start_early

        model = model_file(data_dir_from(environment()))
        if argv[0] == "remember":  # its model in a process of its own, which judges there too
            from ...checks.injection import judge

            start_early(model, served={"judge": judge})
        else:
            start_early(model)
    from .app import group

    group(argv[0] if argv else None)(prog_name="cli-org")


def needs_model(argv: list[str]) -> bool:
    """Whether this command line will embed a query or a claim: recall (unless --arms
    leaves out every arm that finds by meaning: the recall library says which), context
    --for, remember (its injection check and its vector). A guess from the raw words, before
    click parses them: a wrong guess costs time, never a different answer."""
    if not argv or any(a in ("-h", "--help") for a in argv):
        return False
    if argv[0] == "recall":
        from ...recall import ARMS, needs_embedder

        arms = [a.split("=", 1)[1] if "=" in a else "" for a in argv if a.startswith("--arms")]
        given = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--arms"] + [a for a in arms if a]
        return (
            needs_embedder(arm.strip() for spec in given for arm in spec.split(",")) if given else needs_embedder(ARMS)
        )
    if argv[0] == "remember":
        return True
    return argv[0] == "context" and any(a == "--for" or a.startswith("--for=") for a in argv)


def __getattr__(name: str) -> object:
    if name == "cli":  # every command registered
        from .app import group

        return group()
    if name in ("OrgGroup", "report", "not_utf8"):
        from . import app

        return getattr(app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
