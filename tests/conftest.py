"""Shared fixtures: where the real public samples are (optional) and the project's own samples."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

# Prefect reads its settings at import: give this test session its own home (task caches live in
# $PREFECT_HOME/storage and would leak between sessions), no telemetry, and a generous start-up time.
os.environ["PREFECT_HOME"] = tempfile.mkdtemp(prefix="tomforge-prefect-")
os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
os.environ["PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"] = "180"
os.environ.pop("PREFECT_API_URL", None)

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "warehouse" / "samples"


def _real_samples_dir() -> Path:
    configured = os.environ.get("TOMFORGE_REAL_SAMPLES")
    if configured:
        return Path(configured)
    return REPO.parent / "shared" / "real-samples"


@pytest.fixture(scope="session")
def real_samples() -> Path:
    """The folder of real public excerpts; tests using it skip when it is absent."""
    folder = _real_samples_dir()
    if not folder.is_dir():
        pytest.skip(f"real samples not found at {folder} (set TOMFORGE_REAL_SAMPLES)")
    return folder


@pytest.fixture(scope="session")
def samples() -> Path:
    """The project's own sample files in the real formats (shipped defaults of `tomforge rebuild`)."""
    return SAMPLES


SLOW_FILES = ("test_flows.py", "test_deployments.py", "test_flows_ray.py")  # Prefect's harness and servers


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the slowest tests `slow` in one place (`pytest -m "not slow"` for a quick run)."""
    for item in items:
        if item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
