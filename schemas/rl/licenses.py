"""The license guard: a source whose license forbids training (FANToM's "MIT (evaluation only)",
OpenToM's "CC BY-NC 4.0 (not for training)") must not land in what an RL run trains on.

`publish` refuses a release whose `train` split holds such a source, and `train` refuses a training
split that does, each with one line naming the source and its license, unless the user passes
`--allow-restricted-training`; a release published with the override says so in its card. The rule
reads the license as the source words it (releases and manifests carry it), so it lives here, where
both the publisher (`hub/`) and the training machine (which has only the RL stage) can import it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

OVERRIDE_FLAG = "--allow-restricted-training"
TRAIN_SPLIT = "train"  # the release split an RL run trains on by default (`all/train`)
_FORBIDS = re.compile(r"evaluation[ -]only|not for training|no training|test[ -]only", re.IGNORECASE)


def forbids_training(license_text: str | None) -> bool:
    """Whether a license, as its source words it, rules out training on the data."""
    return bool(license_text and _FORBIDS.search(license_text))


@dataclass(frozen=True)
class Restricted:
    """Rows of one source whose license forbids training, in a split someone trains on."""

    source: str
    license: str
    n_rows: int

    def __str__(self) -> str:
        return f"source {self.source} (license {self.license!r}) has {self.n_rows} rows"


def restricted(rows_per_source: Mapping[str, int], licenses: Mapping[str, str | None]) -> list[Restricted]:
    """The sources of `rows_per_source` whose license forbids training, by name."""
    return [
        Restricted(source, str(licenses.get(source)), n)
        for source, n in sorted(rows_per_source.items())
        if n and forbids_training(licenses.get(source))
    ]


def refusal(found: Iterable[Restricted], where: str) -> str:
    """The one line `publish` and `train` print when they refuse."""
    return (
        "; ".join(str(r) for r in found) + f" in {where}: its license forbids training; "
        f"leave it out of the training split, or pass {OVERRIDE_FLAG} to do it anyway"
    )


def release_licenses(root: Path) -> dict[str, str | None]:
    """Each source's license from a release's `manifest.json` (empty when the release has none)."""
    manifest = Path(root) / "manifest.json"
    if not manifest.is_file():
        return {}
    sources = json.loads(manifest.read_text(encoding="utf-8")).get("sources") or []
    return {fact["source"]: fact.get("license") for fact in sources if "source" in fact}
