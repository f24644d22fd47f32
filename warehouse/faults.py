"""Named checkpoints where a fault test can kill a writer (`kill -9` at a chosen point, reproducibly).

With `TOMFORGE_KILL_AT=k` in its environment, a process sends itself SIGKILL when it passes its k-th
checkpoint (counting from 1): no handler, no `finally`, no flush runs, exactly as `kill -9` from
outside. With `TOMFORGE_CHECKPOINT_LOG=FILE` it appends each checkpoint's name to FILE first, so a
test can count the points a command passes and then aim at each. Without either variable a
checkpoint costs one dictionary look-up.
"""

from __future__ import annotations

import os
import signal

KILL_AT_ENV = "TOMFORGE_KILL_AT"
LOG_ENV = "TOMFORGE_CHECKPOINT_LOG"
_passed = 0


def checkpoint(name: str) -> None:
    """Mark a point of a write (before/after the copy, the validation, the swap...)."""
    global _passed
    kill_at, log = os.environ.get(KILL_AT_ENV), os.environ.get(LOG_ENV)
    if kill_at is None and log is None:
        return
    _passed += 1
    if log:
        with open(log, "a", encoding="utf-8") as out:
            out.write(f"{name}\n")
    if kill_at is not None and _passed == int(kill_at):
        os.kill(os.getpid(), signal.SIGKILL)
