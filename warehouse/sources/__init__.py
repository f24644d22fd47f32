"""Source adapters, one per published format, and how a path or Hub id becomes a local folder."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from tomforge.warehouse.sources.base import Adapter, SourceError
from tomforge.warehouse.sources.registry import SOURCES

SOURCE_NAMES: tuple[str, ...] = SOURCES.names()  # declared in `registry.py`, one `Source` each
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def get_adapter(name: str) -> Adapter:
    """The adapter of a source name, or a SourceError listing the known names."""
    known = SOURCES.names()
    if name not in known:
        raise SourceError(name, f"unknown source; choose one of {', '.join(known)}")
    module = importlib.import_module(f"tomforge.warehouse.sources.{name}")
    return module.ADAPTER


def resolve_input(location: str | Path, adapter: Adapter) -> Path:
    """A local file/folder as given, else a Hub dataset id downloaded with huggingface_hub."""
    path = Path(location)
    if path.exists():
        return path
    repo_id = hub_id_of(str(location))
    if repo_id:
        return download_from_hub(repo_id, adapter)
    raise SourceError(path, "path not found")


def hub_id_of(location: str) -> str | None:
    """The Hub dataset id a location names (`ORG/NAME` or `hf://datasets/ORG/NAME`), or None for a path."""
    text = location.removeprefix("hf://datasets/").removeprefix("hf://") if location.startswith("hf://") else location
    return text if _HUB_ID.match(text) and not text.startswith((".", "/")) else None


def download_from_hub(repo_id: str, adapter: Adapter, revision: str | None = None) -> Path:
    """Download a dataset repo snapshot (only the adapter's files) and return its local folder."""
    from huggingface_hub import snapshot_download  # imported late: reads HF_ENDPOINT at import
    from huggingface_hub.errors import HfHubHTTPError

    try:
        folder = snapshot_download(
            repo_id=repo_id, repo_type="dataset", revision=revision, allow_patterns=adapter.hub_patterns
        )
    except (HfHubHTTPError, OSError, ValueError) as exc:
        from tomforge.schemas.hub_errors import is_unreachable, unreachable

        if is_unreachable(exc):
            raise unreachable(f"download {repo_id}", exc) from None
        raise SourceError(repo_id, f"could not download from the Hugging Face Hub: {type(exc).__name__}") from None
    return Path(folder)
