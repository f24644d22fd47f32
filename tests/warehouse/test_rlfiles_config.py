"""An `rlfiles` source in the config file: its `[sources.rl]` options reach the adapter when a rebuild
stages it, and name the staging folder (other options, other records)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.rl_files import write_trl
from tomforge.flows.config import ConfigError, load_config
from tomforge.flows.staging import stage_source, staged_folder

CONFIG = """
[[sources]]
name = "rlfiles"
location = "{location}"

[sources.rl]
split = "rl_mix"
question_markers = ["Question:"]
end_markers = ["Options:"]
"""


def test_config_options_reach_staging(tmp_path: Path) -> None:
    data = write_trl(tmp_path / "data" / "rl.jsonl")
    path = tmp_path / "tomforge.toml"
    path.write_text(CONFIG.format(location=data), encoding="utf-8")
    (spec,) = load_config(path).sources
    assert spec.options == {"split": "rl_mix", "question_markers": ["Question:"], "end_markers": ["Options:"]}
    folder = stage_source(tmp_path / "staging", spec.name, spec.resolved, options=spec.options)
    assert folder == staged_folder(tmp_path / "staging", spec.name, spec.resolved, spec.options)
    assert folder != staged_folder(tmp_path / "staging", spec.name, spec.resolved)
    items = pq.read_table(folder / "items.parquet")
    assert set(items.column("split").to_pylist()) == {"rl_mix"} and items.num_rows == 3


@pytest.mark.parametrize(
    ("name", "options", "needle"),
    [
        ("hitom", 'split = "x"', "only for --source rlfiles"),
        ("rlfiles", 'story_markers = [""]', "empty story marker"),
    ],
)
def test_bad_rl_options_are_one_line(tmp_path: Path, name: str, options: str, needle: str) -> None:
    path = tmp_path / "tomforge.toml"
    path.write_text(f'[[sources]]\nname = "{name}"\nlocation = "x"\n\n[sources.rl]\n{options}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=needle) as caught:
        load_config(path)
    assert "\n" not in str(caught.value) and "tomforge.toml" in str(caught.value)
