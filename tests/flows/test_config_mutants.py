"""flows/config.py against hand-worked values (issue 38: the mutants mutmut left alive): each section's defaults
and bounds as the docstrings and `flows/default_config.toml` state them, the exact one-line errors, where the
outputs a user file leaves out are anchored, and what `check_before_run` refuses. No warehouse, no flow."""

from __future__ import annotations

from pathlib import Path

import pytest

import tomforge.flows.config as config
from tomforge.audits.config import AuditParams, CleaningPolicy
from tomforge.flows.config import (
    DEFAULT_CONFIG,
    AuditConfig,
    CleanConfig,
    Config,
    ConfigError,
    GenerateConfig,
    PublishConfig,
    RLConfig,
    RLFilesConfig,
    RunnerConfig,
    SourceSpec,
    VariantsConfig,
    WarehouseConfig,
    check_before_run,
    config_path,
    load_config,
    selection_problem,
)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_section_defaults_built_without_a_file() -> None:
    """The defaults a section has when a caller builds it in code (not from the embedded TOML)."""
    assert WarehouseConfig() == WarehouseConfig(
        path=Path("var/warehouse.duckdb"), staging=Path("var/staging"), lock_timeout=None
    )
    generate = GenerateConfig()
    assert (generate.enabled, generate.n, generate.max_order, generate.seed) == (True, 2000, 6, 0)
    assert generate.operators == ["all"] and generate.styles == ["hitom", "exploretom"]
    assert generate.split_fractions == (0.8, 0.1, 0.1) and generate.held_out_test is True
    assert generate.rendering is None and generate.forms is None
    variants = VariantsConfig()
    assert variants.enabled is True and variants.sources is None
    audit = AuditConfig()
    assert (audit.enabled, audit.train, audit.heldout, audit.out) == (
        True,
        "split = 'train'",
        "split <> 'train'",
        Path("var/audit"),
    )
    assert audit.params == AuditParams() and CleanConfig().policy == CleaningPolicy() and CleanConfig().enabled
    publish = PublishConfig()
    assert (publish.enabled, publish.repo, publish.target, publish.tag) == (
        True,
        "local/tomforge-tom",
        "var/release",
        "",
    )
    assert (publish.max_rows_per_shard, publish.private, publish.allow_restricted_training) == (50_000, False, False)
    rl = RLConfig()
    assert (rl.launch, rl.backend, rl.model, rl.dataset, rl.revision) == (
        "none",
        "trl",
        "Qwen/Qwen2.5-0.5B-Instruct",
        "",
        "",
    )
    assert (rl.train, rl.val, rl.gpus, rl.ray_address, rl.data_dir, rl.dry_run, rl.settings) == (
        "all/train",
        "all/test",
        1,
        "",
        "var/rl-data",
        False,
        {},
    )
    runner = RunnerConfig()
    assert (runner.task_runner, runner.max_workers, runner.ray_address) == ("threads", 4, "")
    empty = Config()
    assert empty.sources == [] and empty.warehouse == WarehouseConfig() and empty.runner == RunnerConfig()
    assert (empty.generate, empty.audit, empty.publish, empty.rl) == (generate, audit, publish, rl)
    assert empty.variants == variants and empty.clean == CleanConfig()


@pytest.mark.parametrize(
    ("section", "field", "good", "bad"),
    [
        (WarehouseConfig, "lock_timeout", 0.0, -0.5),
        (WarehouseConfig, "lock_timeout", 2.5, float("inf")),
        (GenerateConfig, "n", 1, 0),
        (GenerateConfig, "max_order", 0, -1),
        (GenerateConfig, "max_order", 12, 13),
        (PublishConfig, "max_rows_per_shard", 1, 0),
        (PublishConfig, "repo", "a.b/c-d_e", "a/b/c"),
        (RLConfig, "gpus", 1, 0),
        (RunnerConfig, "max_workers", 1, 0),
    ],
)
def test_bounds(section: type, field: str, good: object, bad: object) -> None:
    assert getattr(section(**{field: good}), field) == good
    with pytest.raises(ValueError, match=field):
        section(**{field: bad})


def test_sections_are_frozen_and_refuse_unknown_keys() -> None:
    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        RunnerConfig(workers=2)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="frozen"):
        RunnerConfig().max_workers = 2  # type: ignore[misc]


def test_rl_files_flags_keep_only_the_options_given() -> None:
    assert RLFilesConfig().flags() == {}
    assert RLFilesConfig(split="x", end_markers=[]).flags() == {"split": "x", "end_markers": []}


def test_source_spec_location_options_and_unknown_names() -> None:
    spec = SourceSpec(name="tomi", location="@samples/tomi/sub")
    assert spec.options is None
    assert spec.resolved == str(Path(config.__file__).resolve().parents[1] / "warehouse" / "samples" / "tomi" / "sub")
    assert SourceSpec(name="tomi", location="data/@samples/x").resolved == "data/@samples/x"
    rl = SourceSpec(name="rlfiles", location="x", rl=RLFilesConfig(split="s"))
    assert rl.options == {"split": "s"}
    with pytest.raises(ValueError, match=r"unknown source 'nosuch'; choose one of hitom, exploretom, "):
        SourceSpec(name="nosuch", location="x")
    with pytest.raises(ValueError, match="only for --source rlfiles"):
        SourceSpec(name="hitom", location="x", rl=RLFilesConfig(split="s"))


def test_generate_choices_and_split_sizes() -> None:
    assert GenerateConfig().told() == {} and GenerateConfig().input_choices() == {}
    chosen = GenerateConfig(rendering="dialogue", forms=["list", "mc"])
    assert chosen.told()["rendering"] == "dialogue" and "formats" in chosen.told()
    assert chosen.input_choices() == {"rendering": "dialogue", "forms": "list,mc"}
    # 7 * 0.8 = 5.6 -> 5, 0.7 -> 0, 0.7 -> 0; train takes the remainder: 7
    assert GenerateConfig(n=7).split_sizes() == {"train": 7, "validation": 0, "test": 0}
    assert GenerateConfig(n=20, split_fractions=(0.5, 0.25, 0.25)).split_sizes() == {
        "train": 10,
        "validation": 5,
        "test": 5,
    }
    assert GenerateConfig(operators=["none"]).operator_names == []
    with pytest.raises(ValueError, match="teleport"):
        GenerateConfig(operators=["teleport"])
    with pytest.raises(ValueError, match="limerick"):
        GenerateConfig(rendering="limerick")
    with pytest.raises(ValueError, match="sonnet"):
        GenerateConfig(styles=["sonnet"])


def test_variants_sources_chosen_in_order_once() -> None:
    assert VariantsConfig().chosen(["fantom", "tomi", "hitom", "tomi"]) == ["tomi", "hitom"]
    assert VariantsConfig(sources=["tomi", "hitom", "tomi"]).chosen(["hitom"]) == ["tomi", "hitom"]
    assert VariantsConfig(sources=[]).chosen(["hitom"]) == []
    with pytest.raises(ValueError, match="no story parser for fantom"):
        VariantsConfig(sources=["fantom"])
    with pytest.raises(ValueError, match="teleport"):
        VariantsConfig(settings={"operators": ["teleport"]})  # type: ignore[arg-type]


def test_read_toml_errors_name_the_file(tmp_path: Path) -> None:
    absent = tmp_path / "absent.toml"
    with pytest.raises(ConfigError) as caught:
        load_config(absent)
    assert str(caught.value) == f"{absent}: config file not found"
    bad = write(tmp_path, "[generate\n")
    with pytest.raises(ConfigError) as caught:
        load_config(bad)
    assert str(caught.value).startswith(f"{bad}: invalid TOML: ")


def test_config_path_prefers_the_argument_then_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOMFORGE_CONFIG", raising=False)
    assert config_path(None) is None and config_path(Path("a.toml")) == Path("a.toml")
    monkeypatch.setenv("TOMFORGE_CONFIG", "")
    assert config_path(None) is None
    monkeypatch.setenv("TOMFORGE_CONFIG", "from/env.toml")
    assert config_path(None) == Path("from/env.toml") and config_path(Path("a.toml")) == Path("a.toml")


def test_the_variable_names_the_file_read_and_its_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "[generate]\nn = 0\n")
    monkeypatch.setenv("TOMFORGE_CONFIG", str(path))
    with pytest.raises(ConfigError) as caught:
        load_config()
    assert str(caught.value) == f"{path}: generate.n: Input should be greater than or equal to 1"


def test_load_errors_are_exact_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOMFORGE_CONFIG", raising=False)
    path = write(tmp_path, '[[sources]]\nname = "nosuch"\nlocation = "x"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value).startswith(f"{path}: sources.0.name: unknown source 'nosuch'; choose one of hitom, ")
    path = write(tmp_path, "[audit]\nparams = { shingle = 3 }\n")  # a settings dataclass's unknown key
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == f"{path}: audit.params.shingle: Extra inputs are not permitted"
    path = write(tmp_path, "[runner]\nworkers = 3\n")  # a section's own unknown key: the same wording
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == f"{path}: runner.workers: Extra inputs are not permitted"


def test_a_bad_default_names_the_embedded_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no user file an error names the embedded defaults, never "None"."""
    monkeypatch.delenv("TOMFORGE_CONFIG", raising=False)
    broken = write(tmp_path, "[runner]\nmax_workers = 0\n")
    monkeypatch.setattr(config, "DEFAULT_CONFIG", broken)
    with pytest.raises(ConfigError) as caught:
        load_config()
    assert str(caught.value) == f"{broken}: runner.max_workers: Input should be greater than or equal to 1"


def test_anchor_outputs_by_hand() -> None:
    data = {"warehouse": {"path": "/d/run/w.duckdb"}, "audit": {"train": "t"}, "publish": {"target": "hub"}}
    config._anchor_outputs(data, {"publish": {"target": "hub"}})
    assert data == {
        "warehouse": {"path": "/d/run/w.duckdb", "staging": "/d/run/staging"},
        "audit": {"train": "t", "out": "/d/run/audit"},
        "publish": {"target": "hub"},
    }
    empty: dict = {}
    config._anchor_outputs(empty, {})  # no [warehouse] at all (never from load_config): left to the defaults
    assert empty == {}
    bad = {"warehouse": {"path": 3}}
    config._anchor_outputs(bad, {})
    assert bad == {"warehouse": {"path": 3}}  # left for validation to name
    odd = {"warehouse": {"path": "w/x.duckdb"}, "audit": "not a table"}
    config._anchor_outputs(odd, {})
    assert odd["audit"] == "not a table" and odd["publish"] == {"target": "w/release"}


def test_check_before_run_refusals_are_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOMFORGE_CONFIG", raising=False)
    monkeypatch.delenv("TOMFORGE_LOCK_TIMEOUT", raising=False)
    origin = tmp_path / "given.toml"
    missing = tmp_path / "nowhere"
    spec = SourceSpec(name="tomi", location=str(missing))
    good = SourceSpec(name="hitom", location="@samples/hitom")
    with pytest.raises(ConfigError) as caught:
        check_before_run(Config(sources=[good, spec]), origin)
    assert str(caught.value) == (
        f"{origin}: sources[1] (tomi): {missing}: path not found "
        '(give a local file or folder, "@samples/<name>", or a Hub dataset id ORG/NAME)'
    )
    check_before_run(Config(sources=[good, SourceSpec(name="tomi", location="org/name")]))  # a Hub id passes
    with pytest.raises(ConfigError) as caught:
        check_before_run(Config(sources=[good], variants=VariantsConfig(sources=["tomi"])))
    assert str(caught.value) == (
        f"{DEFAULT_CONFIG}: variants.sources: tomi is not a configured source (add a [[sources]] entry)"
    )
    check_before_run(Config(sources=[good], variants=VariantsConfig(enabled=False, sources=["tomi"])))
    for field in ("train", "heldout"):
        audit = AuditConfig(**{field: "nosuch_column = 1"})
        with pytest.raises(ConfigError) as caught:
            check_before_run(Config(audit=audit), origin)
        assert str(caught.value).startswith(f"{origin}: audit.{field}: not a valid SQL condition on items_full: ")
        check_before_run(Config(audit=AuditConfig(enabled=False, **{field: "nosuch_column = 1"})))
    settings = {"no_such_setting": 1}
    check_before_run(Config(rl=RLConfig(settings=settings)))  # launch "none": the settings are never read
    with pytest.raises(ConfigError) as caught:
        check_before_run(Config(rl=RLConfig(launch="inline", settings=settings)), origin)
    assert str(caught.value).startswith(f"{origin}: rl.settings: ") and "no_such_setting" in str(caught.value)


def test_check_before_run_passes_the_rl_section_to_make_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    import tomforge.rl.stage as stage

    calls: list[tuple] = []

    def recorder(backend: str, model: str, overrides: dict, gpus: int = 1) -> None:
        calls.append((backend, model, overrides, gpus))
        if overrides.get("bad") == "type":
            raise TypeError("bad type")
        if overrides.get("bad") == "value":
            raise ValueError("bad value")

    monkeypatch.setattr(stage, "make_settings", recorder)
    rl = RLConfig(launch="deployment", backend="verl", model="m/x", gpus=3, settings={"k": 1})
    check_before_run(Config(rl=rl))
    assert calls == [("verl", "m/x", {"k": 1}, 3)]
    for bad in ("type", "value"):
        with pytest.raises(ConfigError) as caught:
            check_before_run(Config(rl=RLConfig(launch="inline", settings={"bad": bad})), Path("o.toml"))
        assert str(caught.value) == f"o.toml: rl.settings: bad {bad}"


def test_check_before_run_reads_the_lock_timeout_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOMFORGE_LOCK_TIMEOUT", "soon")
    with pytest.raises(Exception, match="TOMFORGE_LOCK_TIMEOUT='soon'"):
        check_before_run(Config())


@pytest.mark.parametrize(
    ("condition", "problem"),
    [
        ("split = 'train'", None),
        ("belief_order >= 2 AND split <> 'test'", None),
        ("", "the condition is empty: "),
        ("split = 'a'; DROP TABLE items", "the condition \"split = 'a'; DROP TABLE items\" holds 2 SQL statements"),
        ("nosuch = 1", "not a valid SQL condition on items_full: Binder Error: "),
    ],
)
def test_selection_problem(condition: str, problem: str | None) -> None:
    found = selection_problem(condition)
    if problem is None:
        assert found is None
    else:
        assert found is not None and found.startswith(problem) and "\n" not in found


def test_selection_problem_writes_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check binds against an in-memory warehouse: nothing appears in the working folder (DuckDB takes
    ":MEMORY:" for a file of that name)."""
    monkeypatch.chdir(tmp_path)
    assert selection_problem("split = 'train'") is None
    assert selection_problem("nosuch = 1") is not None
    assert list(tmp_path.iterdir()) == []
