"""The `tomforge` subcommands, one module per command group; each module's `group` (a Typer app) holds its
commands and `flows/cli.py` adds it to the one `tomforge` app. Shared by all: `terminal.py` (the consoles,
the one-line error exit, the reconciliation table) and `flags.py` (flags that defer to a step's settings)."""
