"""The typed config: embedded defaults, section replacement, one-line errors naming file and field."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tomforge.flows.cli import app
from tomforge.flows.config import ConfigError, load_config
from tomforge.flows.exit_codes import ExitCode


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


def test_omitted_outputs_stay_beside_the_warehouse_the_config_names(tmp_path: Path) -> None:
    """Issue 38: an [audit] section setting only the selections sent the report to ./var/audit, outside the
    paths the config names. The keys a section leaves out keep their default place relative to the warehouse
    the config names; keys it sets are kept as given."""
    run = tmp_path / "run"
    path = tmp_path / "c.toml"
    path.write_text(
        f'[warehouse]\npath = "{run}/w.duckdb"\n[audit]\ntrain = "split = \'train\'"\nheldout = "split = \'test\'"\n',
        encoding="utf-8",
    )
    config = load_config(path)
    assert config.audit.heldout == "split = 'test'"
    assert Path(config.audit.out) == run / "audit"
    assert Path(config.warehouse.staging) == run / "staging" and Path(config.publish.target) == run / "release"
    path.write_text(f'[warehouse]\npath = "{run}/w.duckdb"\n[audit]\nout = "elsewhere"\n', encoding="utf-8")
    assert load_config(path).audit.out == Path("elsewhere")
    defaults = load_config()  # the default layout is unchanged
    assert (defaults.audit.out, defaults.warehouse.staging) == (Path("var/audit"), Path("var/staging"))
    assert defaults.publish.target == "var/release"


@pytest.mark.parametrize(
    "text, needle",
    [
        ('[generate]\nn = "many"\n', "generate.n"),
        ("[generate]\nmax_orders = 3\n", "generate.max_orders"),
        ('[[sources]]\nname = "nosuch"\nlocation = "x"\n', "unknown source"),
        ("[audit]\nparams = { shingle = 3 }\n", "shingle"),
        ("[clean]\npolicy = { drop_everything = true }\n", "drop_everything"),
        ('[publish]\nrepo = "no slash"\n', "publish.repo"),
        ('[rl]\nlaunch = "sometimes"\n', "rl.launch"),
        ("[generate\n", "invalid TOML"),
        ('[variants]\nsources = ["fantom"]\n', "variants.sources: no story parser for fantom"),
        ("[variants]\nsettings = { max_orders = 3 }\n", "max_orders"),
        ('[variants]\nsettings = { operators = ["teleport"] }\n', "unknown operators teleport"),
        ('[generate]\nforms = ["mc", "essay"]\n', "unknown question forms ['essay']"),
        ('[generate]\nrendering = "limerick"\n', "unknown rendering 'limerick'"),
    ],
)
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


def test_variants_section_defaults_and_sources(tmp_path: Path) -> None:
    from tomforge.flows.config import check_before_run
    from tomforge.generators.real.variants import Settings

    config = load_config()
    assert config.variants.enabled and config.variants.settings == Settings()  # the step's own defaults
    assert config.variants.chosen([s.name for s in config.sources]) == ["hitom", "exploretom", "tomi"]
    path = tmp_path / "c.toml"
    path.write_text(
        '[variants]\nsources = ["tomi"]\nsettings = { max_order = 3, balance = false }\n'
        '[[sources]]\nname = "hitom"\nlocation = "@samples/hitom"\n',
        encoding="utf-8",
    )
    config = load_config(path)
    assert config.variants.settings == Settings(max_order=3, balance=False)
    with pytest.raises(ConfigError, match="variants.sources: tomi is not a configured source"):
        check_before_run(config, path)


def test_generate_section_takes_the_rendering_and_question_forms(tmp_path: Path) -> None:
    """`[generate] rendering` and `forms` reach the staged records and their input_ref as the CLI's flags do."""
    from tomforge.flows.staging import open_staged, stage_generated

    path = tmp_path / "c.toml"
    path.write_text(
        '[generate]\nn = 40\nmax_order = 2\nrendering = "dialogue"\nforms = ["list", "answerability"]\n',
        encoding="utf-8",
    )
    config = load_config(path)
    staged = open_staged(stage_generated(tmp_path / "staging", config.generate, "train"))
    rows = staged.items.to_pylist()
    contexts = {c["context_id"]: c for c in staged.contexts.to_pylist()}
    assert len(rows) == config.generate.split_sizes()["train"]
    assert {r["answer_format"] for r in rows} == {"list", "yes_no"}  # "Who knows ...?" and "Can X know ...?"
    assert {r["question_type"] for r in rows} == {"answerability"}
    assert {contexts[r["context_id"]]["context_kind"] for r in rows} == {"dialogue"}
    assert staged.input_ref.endswith(",rendering=dialogue,forms=list,answerability")
    default = open_staged(stage_generated(tmp_path / "staging0", load_config().generate, "train"))
    assert "rendering" not in default.input_ref and "forms" not in default.input_ref


def test_the_cli_names_rendering_and_forms_as_the_config_does(tmp_path: Path) -> None:
    """`generate --forms "list, answerability"` (a space after the comma) records the same choices as the config's
    `forms = ["list", "answerability"]` above: one run, one name, whichever way it was asked for."""
    import duckdb
    from typer.testing import CliRunner

    from tomforge.flows.cli import app

    warehouse = tmp_path / "w.duckdb"
    args = ["generate", "--n", "40", "--max-order", "2", "-w", str(warehouse), "--rendering", "dialogue"]
    result = CliRunner().invoke(app, [*args, "--forms", "list, answerability"])
    assert result.exit_code == 0, result.output
    with duckdb.connect(str(warehouse), read_only=True) as con:
        (input_ref,) = con.execute("SELECT input_ref FROM sources WHERE source = 'tomforge_gen'").fetchone()
    assert input_ref.endswith(",rendering=dialogue,forms=list,answerability")
