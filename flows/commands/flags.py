"""Flags shared by several commands, and flags made from a step's settings field.

A flag that sets a step's parameter is None when unset and is not passed on (`flags_set`), so the step's settings
class decides. `setting_option` builds such a flag from the field it sets: the default `--help` shows is read
from that field (a dataclass or pydantic field, or a function's parameter), never written out a second time.
It is read when the command's help is drawn (`SettingsHelp`), so running a command imports no settings
module it does not use (`train` and `eval` run on a GPU machine without the warehouse's libraries).
A settings dataclass whose fields declare their flags (`tomforge.schemas.flag_fields.flag`) needs no `setting_option`: its
command's options are made from the fields (`flows/commands/field_flags.py`: `train`, `eval`,
`audit`, `clean`, `scan`, `generate`, `variants`).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from typing import Any, Callable

import typer
from typer.core import TyperCommand, TyperOption

from tomforge.schemas.errors import TomforgeError
from tomforge.warehouse.db import DEFAULT_WAREHOUSE


class FlagError(TomforgeError):
    """A flag's value, or a combination of flags, is refused: by the command (`publish --target hub` without
    `--repo`) or by the library the flags' settings go to (pydantic's ValidationError, TRL's own checks, a
    DuckDB condition: `flows.cli.user_errors` words such a ValueError as this class). Bad input, one line."""


WarehouseOption = typer.Option(DEFAULT_WAREHOUSE, "--warehouse", "-w", help="DuckDB warehouse file.")


def flags_set(**flags: Any) -> dict[str, Any]:
    """The flags the user set (not None): a step's typed settings take only these, so every default
    is declared once, in the settings class (`AuditParams`, `CleaningPolicy`, the generator's)."""
    return {name: value for name, value in flags.items() if value is not None}


def setting_default(ref: str) -> Any:
    """The default of `module:Owner.name`: a dataclass field, a pydantic field, or a parameter of a function."""
    module, qualified = ref.split(":")
    owner_name, name = qualified.rsplit(".", 1)
    owner = getattr(importlib.import_module(module), owner_name)
    if dataclasses.is_dataclass(owner):
        field = {f.name: f for f in dataclasses.fields(owner)}[name]
        if field.default_factory is not dataclasses.MISSING:
            return field.default_factory()
        return field.default
    if hasattr(owner, "model_fields"):
        return owner.model_fields[name].get_default(call_default_factory=True)
    return inspect.signature(owner).parameters[name].default


def shown_value(value: Any, param: TyperOption) -> str:
    """A default as `--help` writes it: an on/off flag by the flag it stands for (None: `auto`, the setting decides
    where it runs), a list comma-separated."""
    if value is None and param.secondary_opts:
        return "auto"
    if isinstance(value, bool) and param.secondary_opts:
        return param.opts[0] if value else param.secondary_opts[0]
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


class SettingDefault(str):
    """The shown default of a flag, still to be read from its settings field(s): the text is the field
    reference until `SettingsHelp` resolves it. Several fields (one per backend) show as `trl 32, verl 64`,
    or as one value when they agree."""

    refs: dict[str, str]

    def __new__(cls, refs: dict[str, str]) -> "SettingDefault":
        text = super().__new__(cls, ", ".join(f"{label} {ref}".strip() for label, ref in refs.items()))
        text.refs = refs
        return text

    def resolve(self, param: TyperOption) -> str:
        shown = {label: shown_value(setting_default(ref), param) for label, ref in self.refs.items()}
        if len(set(shown.values())) == 1:
            return next(iter(shown.values()))
        return ", ".join(f"{label} {value}" for label, value in shown.items())


def setting_option(
    *flags: str, setting: str | None = None, by_backend: dict[str, str] | None = None, **options: Any
) -> Any:
    """A flag for the settings field `setting` (`module:Owner.field`), or for one field per backend
    (`by_backend={"trl": ..., "verl": ...}`): None unless given, its shown default read from the field(s)."""
    refs = by_backend if by_backend is not None else {"": setting or ""}
    if not all(refs.values()):
        raise TypeError("setting_option needs setting= or by_backend=")
    return typer.Option(None, *flags, show_default=SettingDefault(refs), **options)


# placeholder -> the function writing that help when it is drawn (`drawn_help`)
_DRAWN_HELP: dict[str, Callable[[], str]] = {}


def drawn_help(make: Callable[[], str], placeholder: str) -> str:
    """A flag's help written by `make` when the help is drawn (`SettingsHelp`): a list a registry holds (the
    sources) is read then, so a source declared after the CLI was imported is listed, and nothing is imported
    for it before. Until then the help is `placeholder` (click keeps help as a plain string, so the
    placeholder is the key)."""
    _DRAWN_HELP[placeholder] = make
    return placeholder


def resolve_shown_defaults(command: TyperCommand) -> None:
    """Replace every `SettingDefault` of `command`'s flags with the text its field(s) give, and every
    `drawn_help` placeholder with the text its function writes."""
    for param in command.params:
        if isinstance(param, TyperOption) and isinstance(param.show_default, SettingDefault):
            param.show_default = param.show_default.resolve(param)
        if isinstance(param, TyperOption) and param.help in _DRAWN_HELP:
            param.help = _DRAWN_HELP[param.help]()


class SettingsHelp(TyperCommand):
    """A command whose flags' shown defaults are read from their settings fields when its help is drawn."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        resolve_shown_defaults(self)
        super().format_help(ctx, formatter)
