"""The one typed configuration of a tomforge run, read from TOML and validated with clear errors.

Embedded defaults (`flows/default_config.toml`) run offline on the project's own samples; a user
file replaces whole sections it names.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tomforge.audits.config import AuditParams, CleaningPolicy
from tomforge.generators.generate import DEFAULT_MAX_ORDER, DEFAULT_SPLIT_FRACTIONS
from tomforge.generators.operators import OPERATORS
from tomforge.generators.real.variants import Settings as VariantSettings
from tomforge.generators.templates import STYLES
from tomforge.schemas.errors import TomforgeError
from tomforge.warehouse.sources import hub_id_of
from tomforge.warehouse.sources.registry import SOURCES

DEFAULT_CONFIG = Path(__file__).resolve().parent / "default_config.toml"
SAMPLES_DIR = Path(__file__).resolve().parents[1] / "warehouse" / "samples"


class ConfigError(TomforgeError):
    """A configuration file that cannot be used; one line naming the file and the field."""


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WarehouseConfig(Section):
    path: Path = Path("var/warehouse.duckdb")
    staging: Path = Path("var/staging")
    # seconds a writer waits for another's lock (warehouse and release folder); None: the lock's own default
    # (600 s); TOMFORGE_LOCK_TIMEOUT overrides it (warehouse/lock.py, docs/concurrency.md)
    lock_timeout: float | None = Field(default=None, ge=0, allow_inf_nan=False)


class RLFilesConfig(Section):
    """`[sources.rl]` of an `rlfiles` source: the `tomforge ingest` flags of the same names (docs/rl-files.md)."""

    split: str | None = None
    answer_field: str | None = None
    story_markers: list[str] | None = None
    question_markers: list[str] | None = None
    end_markers: list[str] | None = None
    prompt_field: str | None = None

    def flags(self) -> dict[str, Any]:
        """The options given, as `flows.rl_ingest_options.rl_adapter` takes them."""
        return {name: value for name, value in self.model_dump().items() if value is not None}


class SourceSpec(Section):
    """One input: a source name and a local path, `@samples/...`, or a Hub dataset id; an `rlfiles`
    source may carry its reading options (`rl`)."""

    name: str
    location: str
    rl: RLFilesConfig | None = None

    @model_validator(mode="after")
    def _rl_only_for_rlfiles(self) -> "SourceSpec":
        if self.rl is not None:
            from tomforge.flows.rl_ingest_options import rl_adapter

            rl_adapter(self.name, **self.rl.flags())  # ValueError: options for another source, empty markers
        return self

    @property
    def options(self) -> dict[str, Any] | None:
        return None if self.rl is None else self.rl.flags()

    @field_validator("name")
    @classmethod
    def _known(cls, name: str) -> str:
        known = SOURCES.names()  # read at each check: a source declared later counts
        if name not in known:
            raise ValueError(f"unknown source {name!r}; choose one of {', '.join(known)}")
        return name

    @property
    def resolved(self) -> str:
        if self.location.startswith("@samples/"):
            return str(SAMPLES_DIR / self.location.removeprefix("@samples/"))
        return self.location


class GenerateConfig(Section):
    """Procedurally generated questions (source `tomforge_gen`), staged like any other source. A
    setting left out takes the generator's default (`generators.generate`), as the CLI flags do."""

    enabled: bool = True
    n: int = Field(default=2000, ge=1)
    max_order: int = Field(default=DEFAULT_MAX_ORDER, ge=0, le=12)
    seed: int = 0
    operators: list[str] = Field(default_factory=lambda: ["all"])
    styles: list[str] = Field(default_factory=lambda: list(STYLES))
    split_fractions: tuple[float, float, float] = DEFAULT_SPLIT_FRACTIONS
    held_out_test: bool = True
    rendering: str | None = None  # left out: the generator's (third_person); docs/renderings.md
    forms: list[str] | None = None  # left out: the generator's (mc, free, yes_no); list, answerability too

    @property
    def operator_names(self) -> list[str]:
        return OPERATORS.resolve(self.operators)

    def told(self) -> dict[str, Any]:
        """The rendering and question forms to pass to the generator, only those set (as the CLI's flags)."""
        from tomforge.generators.question_forms import generation_choices

        return generation_choices(self.rendering, self.forms)[0]

    def input_choices(self) -> dict[str, str]:
        """The same choices as a generate run's `input_ref` writes them (`generators.generate.generate_input_ref`)."""
        from tomforge.generators.question_forms import generation_choices

        return generation_choices(self.rendering, self.forms)[1]

    @model_validator(mode="after")
    def _known_names(self) -> "GenerateConfig":
        """Unknown operators or styles fail here, on load, not in the middle of a run."""
        from tomforge.generators import generate_records

        generate_records(
            1, operators=self.operator_names, styles=self.styles, **self.told()
        )  # checks its arguments only
        return self

    def split_sizes(self) -> dict[str, int]:
        """Questions per split, exactly as `generate_splits` divides them."""
        from tomforge.generators.generate import split_sizes

        return split_sizes(self.n, self.split_fractions)


class VariantsConfig(Section):
    """Variants of real stories (`tomforge variants`) after the warehouse is assembled, so they are
    audited, cleaned and published with the rest. `sources`: the configured sources to make variants of
    (default: every configured one with a story parser: hitom, tomi, exploretom); `settings`:
    `generators.real.variants.Settings` (a key left out keeps its default there)."""

    enabled: bool = True
    sources: list[str] | None = None
    settings: VariantSettings = Field(default_factory=VariantSettings)

    @field_validator("sources")
    @classmethod
    def _parsed(cls, names: list[str] | None) -> list[str] | None:
        from tomforge.generators.real.oracle import check_story_sources

        check_story_sources(names or ())
        return names

    @field_validator("settings")
    @classmethod
    def _operators(cls, settings: VariantSettings) -> VariantSettings:
        from tomforge.generators.real.operators import OPERATORS

        OPERATORS.check(settings.operators or ())
        return settings

    def chosen(self, configured: list[str]) -> list[str]:
        """The sources to make variants of, in configuration order, each once."""
        from tomforge.generators.real.oracle import STORY_SOURCES

        wanted = self.sources if self.sources is not None else [name for name in configured if name in STORY_SOURCES]
        return list(dict.fromkeys(wanted))


class AuditConfig(Section):
    """Train vs held-out audit (SQL conditions on `items_full`); `params`: `audits.config.AuditParams`
    (a key left out keeps its default there; an unknown or ill-typed key fails on load)."""

    enabled: bool = True
    train: str = "split = 'train'"
    heldout: str = "split <> 'train'"
    out: Path = Path("var/audit")
    params: AuditParams = Field(default_factory=AuditParams)


class CleanConfig(Section):
    """The cleaning policy: `audits.config.CleaningPolicy` (keys left out keep their defaults)."""

    enabled: bool = True
    policy: CleaningPolicy = Field(default_factory=CleaningPolicy)


class PublishConfig(Section):
    """Where releases go: a local folder (default) or the Hub (`target = "hub"`, token from HF_TOKEN)."""

    enabled: bool = True
    repo: str = Field(default="local/tomforge-tom", pattern=r"^[\w.-]+/[\w.-]+$")
    target: str = "var/release"
    tag: str = ""
    max_rows_per_shard: int = Field(default=50_000, ge=1)
    private: bool = False
    allow_restricted_training: bool = False  # publish --allow-restricted-training (schemas/rl/licenses.py)


class RLConfig(Section):
    """The GPU RL stage. `launch`: "none", "inline" (a subflow here) or "deployment" (the
    `rl-stage/gpu` deployment on the GPU work pool). `settings` overrides the backend's settings."""

    launch: Literal["none", "inline", "deployment"] = "none"
    backend: Literal["trl", "verl"] = "trl"
    model: str = "Qwen/Qwen2.5-0.5B-Instruct"
    dataset: str = ""  # default: the release just published
    revision: str = ""  # default: its tag
    train: str = "all/train"
    val: str = "all/test"
    gpus: int = Field(default=1, ge=1)
    ray_address: str = ""
    data_dir: str = "var/rl-data"
    dry_run: bool = False
    settings: dict[str, Any] = Field(default_factory=dict)


class RunnerConfig(Section):
    """Where tasks run: threads in this process, or Ray (local or a cluster) for scale-out."""

    task_runner: Literal["threads", "ray"] = "threads"
    max_workers: int = Field(default=4, ge=1)
    ray_address: str = ""


class Config(Section):
    warehouse: WarehouseConfig = Field(default_factory=WarehouseConfig)
    sources: list[SourceSpec] = Field(default_factory=list)
    generate: GenerateConfig = Field(default_factory=GenerateConfig)
    variants: VariantsConfig = Field(default_factory=VariantsConfig)
    audit: AuditConfig = Field(default_factory=AuditConfig)
    clean: CleanConfig = Field(default_factory=CleanConfig)
    publish: PublishConfig = Field(default_factory=PublishConfig)
    rl: RLConfig = Field(default_factory=RLConfig)
    runner: RunnerConfig = Field(default_factory=RunnerConfig)


def _read_toml(path: Path) -> dict:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None


def config_path(path: Path | None = None) -> Path | None:
    """The user's file: `path`, else $TOMFORGE_CONFIG, else None (the embedded defaults alone)."""
    if path is None and os.environ.get("TOMFORGE_CONFIG"):
        return Path(os.environ["TOMFORGE_CONFIG"])
    return path


# the outputs laid out beside the warehouse (var/staging, var/audit, var/release beside var/warehouse.duckdb)
ANCHORED_OUTPUTS = (("warehouse", "staging", "staging"), ("audit", "out", "audit"), ("publish", "target", "release"))


def _anchor_outputs(data: dict, user: dict) -> None:
    """An output folder the user's file leaves out stays where the defaults put it relative to the warehouse:
    beside the warehouse file the config names (`[warehouse] path = "/data/run/w.duckdb"` -> audit report in
    /data/run/audit), never in ./var (issue 38: an `[audit]` section setting only the selections sent the
    report to ./var/audit). With the default warehouse path this is the default layout, unchanged."""
    warehouse = data.get("warehouse", {}).get("path", WarehouseConfig().path)
    if not isinstance(warehouse, str):
        return  # a bad value: validation names it
    folder = Path(warehouse).parent
    for section, key, leaf in ANCHORED_OUTPUTS:
        if key in user.get(section, {}) or not isinstance(data.get(section, {}), dict):
            continue
        data[section] = {**data.get(section, {}), key: str(folder / leaf)}


def load_config(path: Path | None = None) -> Config:
    """Embedded defaults, with every section of `path` (or $TOMFORGE_CONFIG) replacing the default one."""
    path = config_path(path)
    data = _read_toml(DEFAULT_CONFIG)
    user = _read_toml(Path(path)) if path is not None else {}
    data.update(user)
    _anchor_outputs(data, user)
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        message = first["msg"].removeprefix("Value error, ")  # pydantic's prefix for a validator's ValueError
        if first["type"] == "unexpected_keyword_argument":  # a key unknown to a settings dataclass ([audit] params)
            message = "Extra inputs are not permitted"  # worded as for every other section's unknown key
        raise ConfigError(f"{path or DEFAULT_CONFIG}: {field}: {message}") from None


def check_before_run(config: Config, origin: Path | None = None) -> None:
    """What a run would only find out later, checked before it starts (so a user error never surfaces
    as a traceback from inside the flow): every source location exists locally or is a Hub dataset id,
    the audit's conditions are valid SQL on `items_full`, and the RL stage's settings are known keys."""
    from tomforge.warehouse.lock import timeout_from_env

    where = config_path(origin) or DEFAULT_CONFIG
    timeout_from_env()  # a bad TOMFORGE_LOCK_TIMEOUT: exit 2 now, not when the flow first takes the lock
    for index, spec in enumerate(config.sources):
        if not Path(spec.resolved).exists() and hub_id_of(spec.resolved) is None:
            raise ConfigError(
                f"{where}: sources[{index}] ({spec.name}): {spec.location}: path not found "
                '(give a local file or folder, "@samples/<name>", or a Hub dataset id ORG/NAME)'
            )
    configured = [spec.name for spec in config.sources]
    for name in (config.variants.sources or []) if config.variants.enabled else []:
        if name not in configured:
            raise ConfigError(f"{where}: variants.sources: {name} is not a configured source (add a [[sources]] entry)")
    if config.audit.enabled:
        for field in ("train", "heldout"):
            problem = selection_problem(getattr(config.audit, field))
            if problem:
                raise ConfigError(f"{where}: audit.{field}: {problem}")
    if config.rl.launch != "none":
        from tomforge.rl.stage import make_settings

        try:
            make_settings(config.rl.backend, config.rl.model, config.rl.settings, gpus=config.rl.gpus)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{where}: rl.settings: {exc}") from None


def selection_problem(condition: str) -> str | None:
    """Why `condition` is not a valid filter on `items_full` (bound against an empty warehouse), or None."""
    import duckdb

    from tomforge.warehouse.db import create_schema
    from tomforge.warehouse.selection import SelectionSyntaxError, check_selection

    try:
        check_selection(condition, "the condition")
    except SelectionSyntaxError as exc:
        return str(exc)
    con = duckdb.connect(":memory:")
    try:
        create_schema(con)
        con.execute(f"SELECT count(*) FROM items_full WHERE ({condition})")
    except duckdb.Error as exc:
        return f"not a valid SQL condition on items_full: {str(exc).strip().splitlines()[0]}"
    finally:
        con.close()
    return None
