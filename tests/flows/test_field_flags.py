"""A setting is one declaration (issue 39): a field added to a settings dataclass with `flag(...)` appears as the
command's option, with its help and the field's default in `--help`, and its value reaches the settings object.
The expected help lines, defaults and values are written by hand."""

from __future__ import annotations

import dataclasses
import inspect
import re
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Optional

import click
import pytest
import typer
from typer.testing import CliRunner

from tomforge.audits.scan_config import ScanParams
from tomforge.flows.cli_polish import plain_help_text
from tomforge.flows.commands.field_flags import FieldOption, FlagValues, field_flags, field_options, param_name
from tomforge.flows.commands.flags import SettingsHelp
from tomforge.generators.real.variant_settings import Settings as VariantSettings
from tomforge.generators.settings import GenerationSettings
from tomforge.rl.eval_settings import EvalSettings
from tomforge.schemas.flag_fields import Flag, flag, flag_of


@dataclass(frozen=True)
class WiderScan(ScanParams):
    """ScanParams with one more setting, declared once."""

    max_hits: int = flag(25, "--max-hits", min=1, help="Hits kept per story.")


@dataclass(frozen=True)
class WiderEval(EvalSettings):
    """EvalSettings with one more setting, declared once."""

    beams: int = flag(1, "--beams", min=1, help="Beams per prompt.")


def _app(owners: dict[str, type], seen: list[FlagValues]) -> typer.Typer:
    app = typer.Typer()

    @app.command(cls=SettingsHelp)
    @field_flags(owners, after="name")
    def run(
        first: int = typer.Option(1, "--first", help="Comes first."),
        name: str = typer.Option("x", "--name", help="A name."),
        last: int = typer.Option(0, "--last", help="Comes after the fields' flags."),
        *,
        flags: FlagValues,
    ) -> None:
        """A command."""
        seen.append(flags)

    @app.command()
    def other() -> None:
        """A second command, so that `run` keeps its name."""

    return app


def _help_lines(app: typer.Typer) -> dict[str, str]:
    plain_help_text()  # as `tomforge` draws help: a text default as `[default: 25]`
    output = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"}).output
    return {word: line for line in output.splitlines() for word in line.split()[1:3] if word.startswith("--")}


# (settings class with a new field, its flag, field, default and a value; an inherited flag, its shown default,
# a value for it and its field): written by hand from scan_config.py and eval_settings.py
NEW_FIELDS = [
    (WiderScan, "--max-hits", "max_hits", 25, 7, "--jaccard", "0.8", ("--alpha", "0.05"), ("ngram_alpha", 0.05)),
    (WiderEval, "--beams", "beams", 1, 4, "--batch-size", "64", ("--generator", "hf"), ("backend", "hf")),
]


@pytest.mark.parametrize(
    ("owner", "new", "field", "default", "value", "kept", "kept_default", "given", "set_"), NEW_FIELDS
)
def test_a_new_field_is_a_flag_of_the_command_and_reaches_the_setting(
    owner: type, new: str, field: str, default: int, value: int, kept: str, kept_default: str, given: tuple, set_: tuple
) -> None:
    seen: list[FlagValues] = []
    app = _app({"settings": owner}, seen)
    lines = _help_lines(app)
    help_text = {"--max-hits": "Hits kept per story.", "--beams": "Beams per prompt."}[new]
    assert help_text in lines[new] and f"[default: {default}]" in lines[new]
    assert "x>=1" in lines[new]
    assert f"[default: {kept_default}]" in lines[kept]  # the inherited fields' flags are there too
    order = [flag for flag in lines if flag in ("--first", "--name", kept, new, "--last")]
    assert order == ["--first", "--name", kept, new, "--last"]  # after `name`, in field order

    assert CliRunner().invoke(app, ["run", new, str(value), *given]).exit_code == 0
    built = seen[-1].build(owner)
    assert (getattr(built, field), getattr(built, set_[0])) == (value, set_[1])
    assert CliRunner().invoke(app, ["run"]).exit_code == 0
    assert seen[-1].build(owner) == owner()  # nothing given: every default from the class
    refused = CliRunner().invoke(app, ["run", new, "0"])
    assert refused.exit_code == 2 and new in refused.output  # click's own check of `min`
    not_a_number = CliRunner().invoke(app, ["run", "--first", "one"])  # the command's own flags keep their types
    assert not_a_number.exit_code == 2 and "--first" in not_a_number.output


def test_a_new_eval_field_is_a_flag_of_tomforge_eval_and_reaches_its_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real `eval` command, its settings widened by one field: the flag shows after `--gate` (the last field)
    and before `--warehouse` (the parameter after `--limit`), and `eval --gpus 2` repeats it, with the other
    settings flags given, for the processes it starts."""
    from tomforge.flows.commands import rl

    started: list[list[str]] = []
    monkeypatch.setattr(rl, "_check_eval_ready", lambda model, store, splits: [])
    monkeypatch.setattr(
        rl, "_launch_eval_processes", lambda gpus, d, r, given: started.append(rl.eval_arguments(given))
    )
    app = typer.Typer()
    app.command("eval", cls=SettingsHelp)(field_flags({"eval": WiderEval}, after="limit")(rl.eval_.__wrapped__))
    app.command("other")(lambda: None)
    plain_help_text()
    output = CliRunner().invoke(app, ["eval", "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"}).output
    flags = [w for line in output.splitlines() for w in line.split()[1:3] if w.startswith("--")]
    assert flags[flags.index("--limit") :][:7] == [
        *("--limit", "--batch-size", "--max-new-tokens", "--generator", "--gate", "--beams", "--warehouse")
    ]
    args = ["eval", "-m", "m", "-d", "org/tom", "--gpus", "2", "--beams", "3", "--gate", "0.5", "--no-store"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert started == [
        [
            *("--model", "m", "--dataset", "org/tom", "--warehouse", "var/warehouse.duckdb", "--out", "var/eval"),
            *("--no-store", "--gate", "0.5", "--beams", "3", "--split", "all/test"),
        ]
    ]


@dataclass
class WiderVariants(VariantSettings):
    """`variants`' settings with one more setting, declared once."""

    chains: int = flag(2, "--chains", min=1, help="Chains per story.")


@dataclass(frozen=True)
class WiderGeneration(GenerationSettings):
    """`generate`'s settings with one more setting, declared once."""

    depth: int = flag(3, "--depth", min=1, help="Rooms per world.")


def _flag_order(app: typer.Typer, command: str) -> list[str]:
    plain_help_text()
    output = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"}).output
    found = ([w for w in line.split()[1:3] if re.fullmatch(r"--[a-z-]+", w)] for line in output.splitlines())
    return [words[0] for words in found if words]  # an on/off pair by its first name


def test_a_new_variants_field_is_a_flag_of_tomforge_variants_and_reaches_its_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The real `variants` command, its settings widened by one field: the flag shows after `--balance` (the last
    field) and before `--warehouse`, `--operators` keeps its place between `--max-order` and `--seed` (`breaks`),
    and the settings the step gets hold the new field's value beside the others given."""
    from tomforge.flows.commands import ingest
    from tomforge.generators.real import oracle, store

    seen: list[object] = []
    stub_run = SimpleNamespace(report=None)  # the variants run the command prints (its printers stubbed too)
    monkeypatch.setattr(ingest, "Settings", WiderVariants)
    monkeypatch.setattr(oracle, "check_story_sources", lambda names: None)
    monkeypatch.setattr(store, "run_variants", lambda warehouse, source, settings: seen.append(settings) or stub_run)
    monkeypatch.setattr(ingest, "print_variants", lambda source, run: None)
    monkeypatch.setattr(ingest, "show_reconciliation", lambda reports: None)
    command = field_flags({"variants": WiderVariants}, after="source", breaks={"seed": "operators"})
    app = typer.Typer()
    app.command("variants", cls=SettingsHelp)(command(ingest.variants.__wrapped__))
    app.command("other")(lambda: None)
    assert _flag_order(app, "variants") == [
        *("--source", "--max-order", "--operators", "--seed", "--n-per-story", "--balance", "--chains"),
        *("--warehouse", "--help"),
    ]
    args = ["variants", "-s", "tomi", "--chains", "5", "--seed", "3", "--operators", "none", "--no-balance"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert seen == [WiderVariants(max_order=6, operators=[], seed=3, n_per_story=1, balance=False, chains=5)]


def test_a_new_generate_field_is_a_flag_of_tomforge_generate_and_reaches_its_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The real `generate` command, its settings widened by one field: the flag shows after `--rendering` (the
    last field) and before `--forms`; the run's settings hold its value and the given flags, nothing is loaded."""
    from tomforge.flows.commands import ingest

    built: list[object] = []
    generation = ingest._generation

    def capture(*args: object) -> tuple:
        settings, records, input_ref = generation(*args)  # type: ignore[arg-type]
        built.append((settings, input_ref))
        raise SystemExit(0)

    monkeypatch.setattr(ingest, "GenerationSettings", WiderGeneration)
    monkeypatch.setattr(ingest, "_generation", capture)
    command = field_flags({"generate": WiderGeneration}, after="n", breaks={"source": "held_out"})
    app = typer.Typer()
    app.command("generate", cls=SettingsHelp)(command(ingest.generate.__wrapped__))
    app.command("other")(lambda: None)
    assert _flag_order(app, "generate") == [
        *("--n", "--max-order", "--seed", "--warehouse", "--operators", "--styles", "--held-out", "--source"),
        *("--rendering", "--depth", "--forms", "--help"),
    ]
    args = ["generate", "--n", "10", "--depth", "4", "--seed", "9", "--operators", "none", "--styles", "hitom"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    expected = WiderGeneration(seed=9, operators=[], styles=["hitom"], depth=4)
    assert built == [(expected, "generate:n=10,max_order=6,seed=9,operators=none,styles=hitom,held_out=True")]


def test_breaks_place_a_run_of_options_after_another_parameter() -> None:
    """`breaks`: `--rate` and the options after it (`--mine`) follow `last`; `--size` stays after `first`. A break
    naming no parameter of the command is refused."""

    def command(first: int = 1, last: int = 0, *, flags: FlagValues) -> None: ...

    placed = field_flags({"left": Left}, after="first", breaks={"rate": "last"})(command)
    assert list(inspect.signature(placed).parameters) == ["first", "size", "last", "rate", "mine"]
    with pytest.raises(TypeError, match=r"command: field flags placed after no parameter of its own: \['nowhere'\]"):
        field_flags({"left": Left}, after="first", breaks={"rate": "nowhere"})(command)


@dataclass
class Left:
    model: str
    size: int = flag(4, "--size", "-s", help="left: items;")
    rate: float = flag(0.5, "--rate", help="Step size.")
    mine: bool | None = flag(None, "--mine/--not-mine", help="Left only.")


@dataclass
class Right:
    size: int = flag(6, "--size", "-s", help="right: batches.")
    rate: float = flag(0.5, "--rate", help="Step size.")
    gone: str = "kept"  # no flag: not on the command line


def test_fields_of_two_classes_sharing_a_flag_are_one_option() -> None:
    options = field_options({"left": Left, "right": Right})
    assert [o.param for o in options] == ["size", "rate", "mine"]
    assert [o.flag.help for o in options] == ["left: items; right: batches.", "Step size.", "Left only."]
    assert [o.annotation() for o in options] == [Optional[int], Optional[float], Optional[bool]]
    seen: list[FlagValues] = []
    app = _app({"left": Left, "right": Right}, seen)
    lines = _help_lines(app)
    assert "[default: left 4, right 6]" in lines["--size"]
    assert "[default: 0.5]" in lines["--rate"]  # equal defaults: one value
    assert "[default: auto]" in lines["--mine"]  # an on/off pair whose field is None
    assert CliRunner().invoke(app, ["run", "-s", "9", "--not-mine"]).exit_code == 0
    assert seen[-1].given(Left) == {"size": 9, "mine": False}
    assert seen[-1].given(Right) == {"size": 9}
    assert seen[-1].build(Left, model="m") == Left("m", size=9, rate=0.5, mine=False)


def test_the_given_flags_are_written_back_as_arguments() -> None:
    """In option order, unset ones left out, an on/off pair by the name of its value: written by hand."""
    options = tuple(field_options({"left": Left, "right": Right}))
    assert FlagValues(options, {"size": 9, "rate": None, "mine": False}).arguments() == ["--size", "9", "--not-mine"]
    assert FlagValues(options, {"size": None, "rate": 0.25, "mine": True}).arguments() == ["--rate", "0.25", "--mine"]
    assert FlagValues(options, {"size": 0, "rate": None, "mine": None}).arguments() == ["--size", "0"]
    # an on/off declaration is cut at its first "/", as click cuts it (its own parse is the reference)
    odd = FieldOption("odd", Flag(("--a/--b/--c",)), (("left", Left, "mine"),))
    parsed = click.Option(["--a/--b/--c"], is_flag=True)
    assert FlagValues((odd,), {"odd": True}).arguments() == parsed.opts
    assert FlagValues((odd,), {"odd": False}).arguments() == parsed.secondary_opts == ["--b/--c"]


def test_param_names_come_from_the_first_flag_name() -> None:
    assert param_name(Flag(("--num-generations",))) == "num_generations"
    assert param_name(Flag(("--bf16/--no-bf16",))) == "bf16"
    assert param_name(Flag(("--learning-rate", "--lr"))) == "learning_rate"
    assert param_name(Flag(("-o", "--output-dir"))) == "o"
    assert param_name(Flag(("--X-ray",))) == "X_ray"  # only the dashes stripped


def test_a_parameter_named_like_a_field_flag_is_refused() -> None:
    def command(size: int = 1, *, flags: FlagValues) -> None: ...

    with pytest.raises(TypeError, match=r"command: parameters named like field flags: \['size'\]"):
        field_flags({"left": Left}, after="size")(command)


def test_flag_declares_a_field_with_its_default_and_metadata() -> None:
    @dataclass
    class Declared:  # declared here, so that the test runs `flag`
        model: str
        size: int = flag(4, "--size", "-s", help="items;")

    fields = {f.name: f for f in dataclasses.fields(Declared)}
    assert fields["size"].default == 4 and Declared("m").size == 4
    assert flag_of(fields["size"]) == Flag(("--size", "-s"), "items;", ())
    assert flag_of(fields["model"]) is None
    listed = dataclasses.field(metadata={"tomforge.flag": "not a Flag"})
    assert flag_of(listed) is None

    @dataclass
    class Made:
        names: list[str] = flag(None, "--names", default_factory=lambda: ["a"], min=0)

    assert Made().names == ["a"] and Made().names is not Made().names
    assert flag_of(dataclasses.fields(Made)[0]) == Flag(("--names",), "", (("min", 0),))
    with pytest.raises(TypeError, match=r"^flag\(\) needs at least one flag name$"):
        flag(1)
