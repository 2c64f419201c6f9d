"""The cli-org command line: parse, call one library function, render.

The entry point is light on purpose: `recall` and `context` first ask the warm helper
(cli_org/warm), and only when it does not answer do click and the commands load
(cli_org/cli/app.py). `from cli_org.cli import cli` still gives the command group.
"""

from __future__ import annotations

import sys


def main() -> None:
    from ..warm.client import answer_command

    code = answer_command(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from .app import cli

    cli(prog_name="cli-org")


def __getattr__(name: str):
    if name in ("cli", "OrgGroup", "report", "not_utf8"):
        from . import app

        return getattr(app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
