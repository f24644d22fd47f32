"""The typed config: embedded defaults, section replacement, one-line errors naming file and field."""
from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.config import ConfigError, load_config
from flows.exit_codes import ExitCode


def test_defaults_run_offline_on_own_samples() -> None:
    config = load_config()
    assert [s.name for s in config.sources] == ["hitom", "exploretom", "fantom", "opentom", "tomi", "bigtom"]
    assert all(Path(s.resolved).is_dir() for s in config.sources)
    assert config.publish.target != "hub" and config.rl.launch == "none"


def test_a_user_file_replaces_the_sections_it_names(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[generate]\nn = 7\n[[sources]]\nname = "tomi"\nlocation = "/data/tomi"\n', encoding="utf-8")
    config = load_config(path)
    assert config.generate.n == 7 and config.generate.seed == 0
    assert [(s.name, s.resolved) for s in config.sources] == [("tomi", "/data/tomi")]
    assert config.audit.enabled  # untouched sections keep their defaults


@pytest.mark.parametrize("text, needle", [
    ('[generate]\nn = "many"\n', "generate.n"),
    ('[generate]\nmax_orders = 3\n', "generate.max_orders"),
    ('[[sources]]\nname = "nosuch"\nlocation = "x"\n', "unknown source"),
    ('[audit]\nparams = { shingle = 3 }\n', "shingle"),
    ('[clean]\npolicy = { drop_everything = true }\n', "drop_everything"),
    ('[publish]\nrepo = "no slash"\n', "publish.repo"),
    ('[rl]\nlaunch = "sometimes"\n', "rl.launch"),
    ("[generate\n", "invalid TOML"),
])
def test_bad_config_is_one_line_naming_file_and_field(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "c.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert str(path) in message and needle in message and "\n" not in message
    result = CliRunner().invoke(app, ["rebuild", "--config", str(path)])
    assert result.exit_code == ExitCode.BAD_INPUT and "Traceback" not in result.output


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "absent.toml")
