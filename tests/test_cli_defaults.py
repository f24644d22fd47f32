"""The CLI declares no defaults of its own: an unset flag is None and the step's settings class
decides. The defaults shown in `--help` are read from the settings field each flag names
(`flows/commands/flags.py`); here each flag's shown default is checked against the field this file
expects it to set, so a flag wired to the wrong field (or a literal default) fails."""

from __future__ import annotations

import dataclasses

import pytest
import typer.main

from tomforge.audits.config import AuditParams, CleaningPolicy
from tomforge.audits.scan_config import DEFAULT_BENCHMARK, ScanParams
from tomforge.flows.cli import app
from tomforge.flows.commands.flags import flags_set, resolve_shown_defaults
from tomforge.generators import STYLES
from tomforge.generators.generate import DEFAULT_MAX_ORDER, DEFAULT_SOURCE
from tomforge.generators.question_forms import DEFAULT_FORMS
from tomforge.generators.real.variants import Settings
from tomforge.generators.renderings import THIRD_PERSON
from tomforge.generators.settings import GenerationSettings

COMMANDS = typer.main.get_command(app).commands


def shown(command: str) -> dict[str, object]:
    """flag parameter name -> (default value, the default `--help` shows, the option's flag names)."""
    resolve_shown_defaults(COMMANDS[command])  # what drawing the command's help does first
    return {p.name: (p.default, p.show_default, p.opts, p.secondary_opts) for p in COMMANDS[command].params}


def shown_default(value: object, opts: list[str], secondary: list[str]) -> str:
    """How a default value is written in --help: a boolean flag pair by the flag it stands for."""
    if isinstance(value, bool):
        return opts[0] if value else secondary[0]
    return str(value)


SETTINGS_FLAGS = [  # (command, the settings' defaults, flag parameter -> the settings field it sets)
    (
        "audit",
        {f.name: f.default for f in dataclasses.fields(AuditParams)},
        {
            "shingle_n": "shingle_n",
            "num_perm": "num_perm",
            "jaccard": "jaccard_threshold",
            "ngram_n": "ngram_n",
            "seed": "seed",
        },
    ),
    (
        "clean",
        {f.name: f.default for f in dataclasses.fields(CleaningPolicy)},
        {
            "drop_jaccard": "drop_cross_jaccard",
            "drop_containment": "drop_cross_containment",
            "drop_structural": "drop_structural",
            "reshuffle": "reshuffle_options",
            "seed": "seed",
            "quarantine_oracle": "quarantine_oracle",
        },
    ),
    (
        "variants",
        {f.name: f.default for f in dataclasses.fields(Settings)},
        {"max_order": "max_order", "seed": "seed", "n_per_story": "n_per_story", "balance": "balance"},
    ),
    (
        "generate",
        {
            "max_order": DEFAULT_MAX_ORDER,
            "seed": 0,
            "styles": ",".join(STYLES),
            "source": DEFAULT_SOURCE,
            "rendering": THIRD_PERSON,
            "forms": ",".join(DEFAULT_FORMS),
        },
        {
            "max_order": "max_order",
            "seed": "seed",
            "styles": "styles",
            "source": "source",
            "rendering": "rendering",
            "forms": "forms",
        },
    ),
    (
        "scan",
        {f.name: f.default for f in dataclasses.fields(ScanParams)},
        {
            "jaccard": "jaccard_threshold",
            "containment": "containment_threshold",
            "alpha": "ngram_alpha",
            "batch_docs": "batch_docs",
        },
    ),
]


@pytest.mark.parametrize(("command", "defaults", "flags"), SETTINGS_FLAGS)
def test_unset_flags_defer_to_the_settings_and_help_shows_their_defaults(
    command: str, defaults: dict[str, object], flags: dict[str, str]
) -> None:
    params = shown(command)
    for flag, setting in flags.items():
        value, help_default, opts, secondary = params[flag]
        assert value is None, (command, flag)
        assert help_default == shown_default(defaults[setting], opts, secondary), (command, flag)


def test_flags_set_keeps_only_the_flags_given() -> None:
    assert flags_set(a=None, b=0, c=False, d="x") == {"b": 0, "c": False, "d": "x"}
    assert AuditParams(**flags_set(shingle_n=None, seed=3)) == AuditParams(seed=3)


def test_operator_selections_read_the_same_in_the_cli_and_the_config() -> None:
    from tomforge.flows.config import GenerateConfig
    from tomforge.generators.operators import OPERATORS

    every = list(OPERATORS)
    cases = {"all": every, "none": [], "lie, distractor": ["lie", "distractor"], "lie,none": ["lie"], "": []}
    for text, expected in cases.items():
        assert OPERATORS.resolve(text) == expected, text
        assert OPERATORS.resolve(text.split(",")) == expected, text
    assert GenerateConfig(operators=["all"]).operator_names == every
    assert GenerateConfig(operators=["none"]).operator_names == []
    assert GenerateConfig(operators=["lie"]).operator_names == ["lie"]


def _fields(cls: type) -> dict[str, object]:
    return {f.name: f.default for f in dataclasses.fields(cls)}


def _defaults_of(function: object) -> dict[str, object]:
    import inspect

    return {name: p.default for name, p in inspect.signature(function).parameters.items()}


def _rl_expected() -> dict[str, dict[str, str]]:
    """What `train` and `eval` --help must show, read from the RL stage's own settings and functions."""
    from tomforge.rl import stage
    from tomforge.rl.evaluate import evaluate
    from tomforge.rl.gate import learning_gate
    from tomforge.rl.trl_backend import TrlSettings
    from tomforge.rl.verl_backend import VerlSettings

    trl, verl = _fields(TrlSettings), _fields(VerlSettings)

    def one(trl_name: str, verl_name: str | None = None) -> str:
        if verl_name is not None:
            assert trl[trl_name] == verl[verl_name], (trl_name, verl_name)  # one value shown for both backends
        return str(trl[trl_name])

    def both(trl_name: str, verl_name: str) -> str:
        return f"trl {trl[trl_name]}, verl {verl[verl_name]}"

    assert trl["compile_rollouts"] == trl["compile_layers"]  # `--compile` sets both: one default to show
    train = {
        "output_dir": one("output_dir", "output_dir"),
        "algorithm": one("algorithm"),
        "max_steps": one("max_steps"),
        "epochs": str(verl["total_epochs"]),
        "num_generations": one("num_generations", "rollout_n"),
        "batch_size": both("per_device_train_batch_size", "train_batch_size"),
        "grad_accum": one("gradient_accumulation_steps"),
        "learning_rate": both("learning_rate", "learning_rate"),
        "kl_coef": one("beta", "kl_coef"),
        "max_completion_length": both("max_completion_length", "max_response_length"),
        "bf16": "--bf16" if trl["bf16"] else "--no-bf16",
        "seed": one("seed"),
        "sft_steps": one("sft_steps"),
        "fast_generation": "--fast-generation" if trl["fast_generation"] else "--hf-generation",
        "compile": {None: "auto", True: "--compile", False: "--no-compile"}[trl["compile_layers"]],
        "data_dir": str(_defaults_of(stage.launch)["data_dir"]),
    }
    evaluated = _defaults_of(evaluate)
    eval_ = {
        "batch_size": str(evaluated["batch_size"]),
        "max_new_tokens": str(evaluated["max_new_tokens"]),
        "generator": str(evaluated["backend"]),
        "gate": str(_defaults_of(learning_gate)["threshold"]),
    }
    return {"train": train, "eval": eval_}


@pytest.mark.parametrize("command", ["train", "eval"])
def test_rl_flags_defer_to_the_backend_settings(command: str) -> None:
    params = shown(command)
    for flag, expected in _rl_expected()[command].items():
        value, help_default, _opts, _secondary = params[flag]
        assert value is None, (command, flag)
        assert help_default == expected, (command, flag)


def test_train_without_flags_runs_on_the_settings_defaults() -> None:
    """The dry run's config is the settings class's own (nothing of the CLI's in between)."""
    import json

    from typer.testing import CliRunner

    from tomforge.rl.trl_backend import TrlSettings

    result = CliRunner().invoke(
        app, ["train", "--dataset", "org/tom", "--model", "Qwen/Qwen2.5-0.5B-Instruct", "--dry-run"]
    )
    assert result.exit_code == 0, result.output
    start = result.stdout.index("{")
    printed, _ = json.JSONDecoder().raw_decode(result.stdout[start:])
    expected = dataclasses.asdict(TrlSettings(model="Qwen/Qwen2.5-0.5B-Instruct"))
    assert {k: printed[k] for k in expected if k in printed} == {k: v for k, v in expected.items() if k in printed}
    assert {"per_device_train_batch_size", "max_completion_length", "bf16", "output_dir"} <= set(printed)


@pytest.mark.parametrize("flag, expected", [("--compile", True), ("--no-compile", False)])
def test_compile_flag_sets_both_the_rollouts_and_the_layers(flag: str, expected: bool) -> None:
    import json

    from typer.testing import CliRunner

    result = CliRunner().invoke(app, ["train", "--dataset", "org/tom", "--model", "m/x", "--dry-run", flag])
    assert result.exit_code == 0, result.output
    printed, _ = json.JSONDecoder().raw_decode(result.stdout[result.stdout.index("{") :])
    assert (printed["compile_rollouts"], printed["compile_layers"]) == (expected, expected)


# Flags whose literal default the CLI declares because it mirrors a step's parameter: checked against it.
def _mirrored() -> dict[tuple[str, str], object]:
    from tomforge.hub.export import ExportOptions
    from tomforge.hub.publish_and_verify import publish_warehouse, verify_release
    from tomforge.rl import stage
    from tomforge.warehouse.db import DEFAULT_WAREHOUSE

    mirrored: dict[tuple[str, str], object] = {(name, "warehouse"): DEFAULT_WAREHOUSE for name in COMMANDS}
    mirrored.update(
        {
            ("publish", "max_rows"): ExportOptions().max_rows_per_shard,
            ("publish", "target"): _defaults_of(publish_warehouse)["target"],
            ("verify", "revision"): _defaults_of(verify_release)["revision"],
            ("train", "gpus"): _defaults_of(stage.make_settings)["gpus"],
            ("train", "nnodes"): _defaults_of(stage.make_settings)["nnodes"],
            ("scan", "benchmark"): DEFAULT_BENCHMARK,
        }
    )
    return mirrored


# Flags that choose what the command does (no step has a default for them): the CLI owns their defaults.
CLI_OWNED = {
    ("audit", "out"),
    ("audit", "strict"),
    ("eval", "splits"),
    ("eval", "in_distribution"),
    ("eval", "store"),
    ("eval", "out"),
    ("eval", "gpus"),  # 1: this process, the path before issue 41
    ("generate", "operators"),
    ("generate", "held_out"),
    ("publish", "dry_run"),
    ("publish", "private"),
    ("publish", "only_audited"),
    ("sql", "fmt"),
    ("train", "backend"),
    ("train", "train_split"),
    ("train", "val_split"),
    ("train", "dry_run"),
    ("variants", "operators"),
    ("publish", "allow_restricted_training"),
    ("train", "allow_restricted_training"),
    ("sql", "output"),
    ("scan", "out"),
    ("scan", "strict"),
}
# the rlfiles options: tests/warehouse/test_source_rlfiles.py compares their shown defaults with the adapter's
RLFILES_FLAGS = {"split", "answer_field", "story_marker", "question_marker", "end_marker", "prompt_field"}


def test_every_flag_of_every_command_is_accounted_for() -> None:
    mirrored = _mirrored()
    checked = {command: set(flags) for command, _defaults, flags in SETTINGS_FLAGS}
    checked.update({name: set(flags) for name, flags in _rl_expected().items()} | {"ingest": RLFILES_FLAGS})
    for command in COMMANDS:
        for flag, (value, help_default, _opts, _secondary) in shown(command).items():
            param = next(p for p in COMMANDS[command].params if p.name == flag)
            if param.required:
                continue
            if value is None:  # deferred: a shown default must be one a test compares with its settings
                assert not isinstance(help_default, str) or flag in checked.get(command, set()), (command, flag)
            elif (command, flag) in mirrored:
                assert value == mirrored[(command, flag)], (command, flag)
            else:
                assert (command, flag) in CLI_OWNED, f"{command} --{flag}: a literal default no test checks"


def test_a_flag_shows_the_default_its_settings_field_has_now(monkeypatch: pytest.MonkeyPatch) -> None:
    """Change a settings default and `--help` follows, with nothing in the CLI edited: a planted value no
    settings class has, read back from the drawn help text."""
    from typer.testing import CliRunner

    fields = {f.name: f for f in dataclasses.fields(AuditParams)}
    monkeypatch.setattr(fields["num_perm"], "default", 977)
    monkeypatch.setattr(fields["seed"], "default", 4242)
    result = CliRunner().invoke(app, ["audit", "--help"], terminal_width=200, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    lines = {word: line for line in result.output.splitlines() for word in line.split()[1:3] if word.startswith("--")}
    assert "[default: 977]" in lines["--num-perm"] and "[default: 4242]" in lines["--seed"], result.output
    assert "[default: 13]" in lines["--ngram-n"], result.output


def test_the_cli_imports_no_settings_module_until_help_is_drawn() -> None:
    """Reading the defaults is lazy: `tomforge eval` on the GPU machine needs neither the generator (orjson)
    nor the TRL backend's module to start. `train`'s flags are made from its settings classes' fields when the CLI
    starts (issue 39), so those are imported, from modules of their own that need neither the backend nor the
    reward (`rl/trl_settings.py`, `rl/verl_backend.py`)."""
    import subprocess
    import sys

    code = (
        "import sys\nimport tomforge.flows.cli\n"
        "print(sorted(m for m in ('tomforge.rl.trl_backend', 'tomforge.generators.generate', "
        "'tomforge.generators.real.variants', 'tomforge.rl.evaluate', 'tomforge.rl.reward', 'orjson') "
        "if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout


@dataclasses.dataclass
class _Planted:
    size: int = 7
    names: list[str] = dataclasses.field(default_factory=lambda: ["a", "b"])
    on: bool = False


def _planted_step(rows: int = 11, label: str = "x") -> None:
    """A step function whose signature holds its defaults."""


def test_setting_default_reads_dataclass_pydantic_and_signature_defaults() -> None:
    """Each kind of owner a flag may name, with values written here by hand."""
    from pydantic import BaseModel, Field

    from tomforge.flows.commands.flags import setting_default

    class Model(BaseModel):
        depth: int = 3
        tags: list[str] = Field(default_factory=lambda: ["t"])

    here = __name__
    globals()["_PlantedModel"] = Model
    try:
        assert setting_default(f"{here}:_Planted.size") == 7
        assert setting_default(f"{here}:_Planted.names") == ["a", "b"]
        assert setting_default(f"{here}:_PlantedModel.depth") == 3
        assert setting_default(f"{here}:_PlantedModel.tags") == ["t"]
        assert setting_default(f"{here}:_planted_step.rows") == 11
    finally:
        del globals()["_PlantedModel"]


def test_help_shows_one_value_when_backends_agree_and_each_when_they_differ() -> None:
    """`trl 7, verl 11` for two defaults, `7` when both fields hold 7; an on/off flag by its flag's name, a list
    comma-separated."""
    from typer.testing import CliRunner

    from tomforge.flows.commands.flags import SettingsHelp, setting_option

    here = __name__
    app_ = typer.Typer()

    @app_.command(cls=SettingsHelp)
    def planted(
        differ: int = setting_option(
            "--differ", by_backend={"trl": f"{here}:_Planted.size", "verl": f"{here}:_planted_step.rows"}
        ),
        agree: int = setting_option(
            "--agree", by_backend={"trl": f"{here}:_Planted.size", "verl": f"{here}:_Planted.size"}
        ),
        on: bool = setting_option("--on/--off", setting=f"{here}:_Planted.on"),
        names: str = setting_option("--names", setting=f"{here}:_Planted.names"),
    ) -> None:
        """Planted flags."""

    @app_.command()
    def other() -> None:
        """A second command, so `planted` stays a subcommand."""

    output = CliRunner().invoke(app_, ["planted", "--help"], terminal_width=200, env={"COLUMNS": "200"}).output
    lines = {word: line for line in output.splitlines() for word in line.split()[1:3] if word.startswith("--")}
    assert "[default: trl 7, verl 11]" in lines["--differ"], output
    assert "[default: 7]" in lines["--agree"], output
    assert "[default: --off]" in lines["--on"], output
    assert "[default: a,b]" in lines["--names"], output


# The flag -> field mappings `train`, `scan` and `eval` (`audit`, `clean`: `SETTINGS_FLAGS`) wrote out by hand before
# issue 39 (flag parameter -> field; the parameters now take their names from the flags: `beta` is `kl_coef`,
# `compile_` is `compile`): the reference the fields' own flag declarations must give back.
TRAIN_TRL_BY_HAND = {
    "output_dir": "output_dir",
    "algorithm": "algorithm",
    "max_steps": "max_steps",
    "num_generations": "num_generations",
    "batch_size": "per_device_train_batch_size",
    "learning_rate": "learning_rate",
    "kl_coef": "beta",
    "bf16": "bf16",
    "grad_accum": "gradient_accumulation_steps",
    "seed": "seed",
    "max_completion_length": "max_completion_length",
    "fast_generation": "fast_generation",
    "compile": "compile_layers",
    "sft_steps": "sft_steps",
}
TRAIN_VERL_BY_HAND = {
    "epochs": "total_epochs",
    "batch_size": "train_batch_size",
    "num_generations": "rollout_n",
    "learning_rate": "learning_rate",
    "kl_coef": "kl_coef",
    "max_completion_length": "max_response_length",
    "output_dir": "output_dir",
}
EVAL_BY_HAND = {  # eval's flags were `setting_option`s naming these parameters of `evaluate` and `learning_gate`
    "batch_size": "batch_size",
    "max_new_tokens": "max_new_tokens",
    "generator": "backend",
    "gate": "gate",
}
SCAN_BY_HAND = {
    "jaccard": "jaccard_threshold",
    "containment": "containment_threshold",
    "alpha": "ngram_alpha",
    "batch_docs": "batch_docs",
}


def _owners(command: str) -> dict[str, type]:
    from tomforge.rl.eval_settings import EvalSettings
    from tomforge.rl.trl_backend import TrlSettings
    from tomforge.rl.verl_backend import VerlSettings

    owners = {"train": {"trl": TrlSettings, "verl": VerlSettings}, "scan": {"scan": ScanParams}}
    owners |= {"audit": {"audit": AuditParams}, "clean": {"clean": CleaningPolicy}}
    owners |= {"generate": {"generate": GenerationSettings}, "variants": {"variants": Settings}}
    return {**owners, "eval": {"eval": EvalSettings}}[command]


# generate's field flags: its mapping above less `--styles` and `--forms`, whose fields are lists (written by hand)
GENERATE_BY_HAND = {"max_order": "max_order", "seed": "seed", "source": "source", "rendering": "rendering"}


def _settings_flags(command: str) -> dict[str, str]:
    """The flag -> field mapping `SETTINGS_FLAGS` holds for `command` (audit's and clean's, written by hand)."""
    return next(flags for name, _defaults, flags in SETTINGS_FLAGS if name == command)


@pytest.mark.parametrize(
    "command, label, by_hand",
    [
        ("train", "trl", TRAIN_TRL_BY_HAND),
        ("train", "verl", TRAIN_VERL_BY_HAND),
        ("scan", "scan", SCAN_BY_HAND),
        ("eval", "eval", EVAL_BY_HAND),
        ("audit", "audit", _settings_flags("audit")),
        ("clean", "clean", _settings_flags("clean")),
        ("generate", "generate", GENERATE_BY_HAND),
        ("variants", "variants", _settings_flags("variants")),
    ],
)
def test_the_field_flags_give_the_mapping_once_written_by_hand(command: str, label: str, by_hand: dict) -> None:
    """Every flag set to a value of its own: exactly the hand-written fields come back, each with the value of
    its flag; unset flags (None) set nothing. The options are the command's own parameters."""
    import inspect

    from tomforge.flows.commands import audit, ingest, rl, scan
    from tomforge.flows.commands.field_flags import FlagValues, field_options

    options = tuple(field_options(_owners(command)))
    names = [o.param for o in options]
    commands = {"train": rl.train, "scan": scan.scan, "eval": rl.eval_, "audit": audit.audit, "clean": audit.clean}
    commands |= {"generate": ingest.generate, "variants": ingest.variants}
    function = commands[command]
    assert set(names) <= set(inspect.signature(function).parameters)
    owner = _owners(command)[label]
    given = FlagValues(options, {name: f"value of {name}" for name in names}).given(owner)
    assert given == {field: f"value of {flag}" for flag, field in by_hand.items()}
    assert FlagValues(options, dict.fromkeys(names)).given(owner) == {}


def test_a_drawn_help_is_written_when_the_help_is_drawn() -> None:
    """`drawn_help` leaves its placeholder until `resolve_shown_defaults`, which writes the text its function
    makes at that moment (here a list changed after the option was declared)."""
    import typer as typer_module

    from tomforge.flows.commands.flags import drawn_help

    names = ["a"]
    app_ = typer_module.Typer()

    @app_.command()
    def listed(name: str = typer_module.Option("x", "--name", help=drawn_help(lambda: " or ".join(names), "names?"))):
        """A command."""

    command = typer_module.main.get_command(app_)
    names.append("b")
    assert [p.help for p in command.params if p.name == "name"] == ["names?"]
    resolve_shown_defaults(command)
    assert [p.help for p in command.params if p.name == "name"] == ["a or b"]
