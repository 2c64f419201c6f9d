"""`python -m cli_org` runs the command line."""

from .faces.cli import main

main()
