"""The exit codes of the `tomforge` command (scripts and schedulers branch on them).

They are declared beside the error hierarchy, `schemas/errors.py` (each error class carries its
code there); this module keeps the name every front end imports.
"""

from __future__ import annotations

from tomforge.schemas.errors import ExitCode

__all__ = ["ExitCode"]
