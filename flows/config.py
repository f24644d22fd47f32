"""The one typed configuration of a tomforge run, read from TOML and validated with clear errors.

Embedded defaults (`flows/default_config.toml`) run offline on the project's own samples; a user
file replaces whole sections it names.
"""
from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from warehouse.sources import SOURCE_NAMES

DEFAULT_CONFIG = Path(__file__).resolve().parent / "default_config.toml"
SAMPLES_DIR = Path(__file__).resolve().parents[1] / "warehouse" / "samples"


class ConfigError(Exception):
    """A configuration file that cannot be used; one line naming the file and the field."""


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WarehouseConfig(Section):
    path: Path = Path("var/warehouse.duckdb")
    staging: Path = Path("var/staging")


class SourceSpec(Section):
    """One input: a source name and a local path, `@samples/...`, or a Hub dataset id."""

    name: str
    location: str

    @field_validator("name")
    @classmethod
    def _known(cls, name: str) -> str:
        if name not in SOURCE_NAMES:
            raise ValueError(f"unknown source {name!r}; choose one of {', '.join(SOURCE_NAMES)}")
        return name

    @property
    def resolved(self) -> str:
        if self.location.startswith("@samples/"):
            return str(SAMPLES_DIR / self.location.removeprefix("@samples/"))
        return self.location


class RunnerConfig(Section):
    """Where tasks run: threads in this process, or Ray (local or a cluster) for scale-out."""

    task_runner: Literal["threads", "ray"] = "threads"
    max_workers: int = Field(default=4, ge=1)
    ray_address: str = ""


class Config(Section):
    warehouse: WarehouseConfig = Field(default_factory=WarehouseConfig)
    sources: list[SourceSpec] = Field(default_factory=list)
    runner: RunnerConfig = Field(default_factory=RunnerConfig)


def _read_toml(path: Path) -> dict:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None


def load_config(path: Path | None = None) -> Config:
    """Embedded defaults, with every section of `path` (or $TOMFORGE_CONFIG) replacing the default one."""
    if path is None and os.environ.get("TOMFORGE_CONFIG"):
        path = Path(os.environ["TOMFORGE_CONFIG"])
    data = _read_toml(DEFAULT_CONFIG)
    if path is not None:
        data.update(_read_toml(Path(path)))
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise ConfigError(f"{path or DEFAULT_CONFIG}: {field}: {first['msg']}") from None
