"""`tomforge rebuild`: the main job, the Prefect `rebuild` flow run in-process on a config file or the
embedded defaults; its console shows a user error without Prefect's traceback."""

from __future__ import annotations

import logging
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

import typer

from tomforge.flows.commands.terminal import console, show_reconciliation
from tomforge.schemas.errors import TomforgeError

group = typer.Typer()


def prefect_defaults() -> None:
    """Offline-friendly Prefect settings unless the user set their own (ephemeral server, no telemetry)."""
    import os

    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")


ConfigOption = typer.Option(None, "--config", "-c", help="TOML config (defaults: flows/default_config.toml).")


class UserErrorTracebacks(logging.Filter):
    """Prefect logs a failed task or flow with its traceback; for a user error (a `TomforgeError` that keeps
    no traceback: a bad input file, a warehouse that cannot be used) the message already names the
    problem, so the console shows it without the traceback. Other exceptions keep theirs; Prefect's API
    log keeps every traceback. (A log filter, not an exit code: `user_errors` decides those.)"""

    def __init__(self, kinds: tuple[type[BaseException], ...] = (TomforgeError,)) -> None:
        super().__init__()
        self.kinds = kinds

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, self.kinds) and not (isinstance(error, TomforgeError) and error.keeps_traceback()):
            record.exc_info, record.exc_text = None, None
        return True


@contextmanager
def without_user_error_tracebacks() -> Iterator[None]:
    """Install `UserErrorTracebacks` on the console handlers Prefect set up, for the duration."""
    quiet = UserErrorTracebacks()
    handlers = [
        h for name in ("", "prefect") for h in logging.getLogger(name).handlers if isinstance(h, logging.StreamHandler)
    ]
    for handler in handlers:
        handler.addFilter(quiet)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(quiet)


@group.command()
def rebuild(config: Optional[Path] = ConfigOption) -> None:
    """Run the main job (the Prefect `rebuild` flow, in-process) on the config or embedded defaults."""
    from tomforge.flows.config import check_before_run, load_config

    settings = load_config(config)
    check_before_run(settings, config)  # the whole config and every source path, before Prefect starts
    prefect_defaults()
    from tomforge.flows.pipeline import rebuild_flow, where_things_are
    from tomforge.warehouse.load import LoadReport

    with without_user_error_tracebacks():
        result = rebuild_flow(str(config) if config else None)
    reports = [LoadReport.from_dict(r) for r in result["sources"]]
    show_reconciliation(reports)  # the flow itself refuses counts that do not add up (Unreconciled)
    for line in where_things_are(result):
        console.print(line, highlight=False, markup=False, soft_wrap=True)
