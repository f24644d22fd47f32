"""Installed versions of the tools a step used: recorded in audit runs and release manifests."""

from __future__ import annotations

import platform
from importlib import metadata
from typing import Iterable


def tool_versions(names: Iterable[str], missing: str | None = None) -> dict[str, str]:
    """Python's version plus each named distribution's; a missing one is `missing`, or left out when None."""
    versions = {"python": platform.python_version()}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            if missing is not None:
                versions[name] = missing
    return versions
