"""Command options made from settings fields: a setting is one declaration, the dataclass field with its flag
(`tomforge.schemas.flag_fields.flag`), and a command decorated with `field_flags` offers every such field as an option and
gets the given ones back as one `FlagValues`, which builds the settings object in one call.

Typer reads a command's options from its signature, so the decorator writes the signature: the command's own
parameters with the fields' options inserted after one of them. A flag is None unless given and is passed on only
when given, so the default lives in the field alone; `--help` shows it from there (`flags.SettingDefault`).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, TypeVar

import typer

from tomforge.flows.commands.flags import SettingDefault
from tomforge.schemas.flag_fields import Flag, flag_of

T = TypeVar("T")


@dataclass(frozen=True)
class FieldOption:
    """One option: the command's parameter `param`, its flag (help parts merged) and the fields it sets,
    `(label, owner, field name)` per settings class."""

    param: str
    flag: Flag
    fields: tuple[tuple[str, type, str], ...]

    def option(self) -> Any:
        """The typer option: None unless given, its shown default read from the field(s) when help is drawn."""
        # shown as one value when the fields agree (always, for one settings class), else `trl 32, verl 64`
        refs = {label: f"{owner.__module__}:{owner.__qualname__}.{name}" for label, owner, name in self.fields}
        return typer.Option(
            None,
            *self.flag.names,
            show_default=SettingDefault(refs),
            help=self.flag.help or None,
            **dict(self.flag.options),
        )

    def annotation(self) -> Any:
        """The parameter's type: the first field's, optional (unset is None)."""
        _, owner, name = self.fields[0]
        return Optional[typing.get_type_hints(owner)[name]]


def param_name(flag: Flag) -> str:
    """The command's parameter for a flag: its first name without dashes (`--num-generations` -> num_generations,
    `--bf16/--no-bf16` -> bf16)."""
    return flag.names[0].split("/")[0].lstrip("-").replace("-", "_")


def field_options(owners: dict[str, type]) -> list[FieldOption]:
    """The options of the settings classes `owners` (label -> dataclass), in field order: fields of several
    classes declaring the same flag names make one option, whose help is their distinct parts in order."""
    found: dict[tuple[str, ...], list[tuple[str, type, str, Flag]]] = {}
    for label, owner in owners.items():
        for field in dataclasses.fields(owner):  # type: ignore[arg-type]
            declared = flag_of(field)
            if declared is not None:
                found.setdefault(declared.names, []).append((label, owner, field.name, declared))
    options = []
    for names, fields in found.items():
        parts = list(dict.fromkeys(declared.help for *_, declared in fields if declared.help))
        merged = Flag(names, " ".join(parts), fields[0][3].options)
        options.append(FieldOption(param_name(merged), merged, tuple(f[:3] for f in fields)))
    return options


@dataclass(frozen=True)
class FlagValues:
    """The field options a command got: parameter -> value, None where not given."""

    options: tuple[FieldOption, ...]
    values: dict[str, Any]

    def given(self, owner: type) -> dict[str, Any]:
        """Field -> value of every given flag that sets a field of `owner`."""
        out = {}
        for option in self.options:
            for _, field_owner, name in option.fields:
                if field_owner is owner and self.values[option.param] is not None:
                    out[name] = self.values[option.param]
        return out

    def build(self, owner: Callable[..., T], **fixed: Any) -> T:
        """`owner(**fixed, **given)`: the settings object, unset fields at their defaults."""
        return owner(**fixed, **self.given(owner))  # type: ignore[arg-type]

    def arguments(self) -> list[str]:
        """The given flags as command-line arguments again, in option order (for the processes a command starts
        with the same flags, `eval --gpus N`): `--name value`, or the on or off name of an on/off pair."""
        out: list[str] = []
        for option in self.options:
            value = self.values[option.param]
            if value is None:
                continue
            first = option.flag.names[0]
            if "/" in first:
                on, off = first.split("/", 1)
                out.append(on if value else off)
            else:
                out += [first, str(value)]
        return out


def field_flags(
    owners: dict[str, type], after: str, breaks: Mapping[str, str] | None = None
) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Offer every flag field of `owners` as an option of the decorated command, after its parameter `after`;
    the command takes them as one keyword argument, `flags: FlagValues`. `breaks` (option -> the command's own
    parameter) moves that option and the ones after it behind that parameter, so a command whose options were
    interleaved with its own keeps its `--help` order (`generate`, `variants`)."""

    def decorate(command: Callable[..., T]) -> Callable[..., T]:
        options = field_options(owners)
        signature = inspect.signature(command, eval_str=True)
        own = [p for p in signature.parameters.values() if p.name != "flags"]
        clash = sorted({o.param for o in options} & {p.name for p in own})
        if clash:
            raise TypeError(f"{command.__name__}: parameters named like field flags: {clash}")
        runs = _option_runs(options, after, breaks or {})
        unknown = sorted(set(runs) - {p.name for p in own})
        if unknown:
            raise TypeError(f"{command.__name__}: field flags placed after no parameter of its own: {unknown}")

        @functools.wraps(command)
        def run(**given: Any) -> T:
            values = {o.param: given.pop(o.param, None) for o in options}
            return command(**given, flags=FlagValues(tuple(options), values))

        parameters = [q for p in own for q in [p, *runs.get(p.name, [])]]
        run.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
        run.__annotations__ = {}  # typer reads each type from the signature, evaluated above (no strings left)
        return run

    return decorate


def _option_runs(options: list[FieldOption], after: str, breaks: Mapping[str, str]) -> dict[str, list[Any]]:
    """The command's parameter -> the option parameters that follow it: in field order, after `after` until an
    option named in `breaks` starts a run behind the parameter named there."""
    runs: dict[str, list[Any]] = {}
    anchor = after
    for o in options:
        anchor = breaks.get(o.param, anchor)
        made = inspect.Parameter(
            o.param, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=o.option(), annotation=o.annotation()
        )
        runs.setdefault(anchor, []).append(made)
    return runs
