"""`python -m cli_org` runs the command line."""

from .cli import main

main()
