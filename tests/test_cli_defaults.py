"""The CLI declares no defaults of its own: an unset flag is None and the step's settings class
decides. The defaults shown in `--help` are text, so they are checked here against those classes."""
from __future__ import annotations

import dataclasses

import pytest
import typer.main

from tomforge.audits.config import AuditParams, CleaningPolicy
from tomforge.audits.scan_config import ScanParams
from tomforge.flows.cli import app, given
from tomforge.generators import STYLES
from tomforge.generators.generate import DEFAULT_MAX_ORDER, DEFAULT_SOURCE
from tomforge.generators.real.variants import Settings

COMMANDS = typer.main.get_command(app).commands


def shown(command: str) -> dict[str, object]:
    """flag parameter name -> (default value, the default `--help` shows, the option's flag names)."""
    return {p.name: (p.default, p.show_default, p.opts, p.secondary_opts) for p in COMMANDS[command].params}


def shown_default(value: object, opts: list[str], secondary: list[str]) -> str:
    """How a default value is written in --help: a boolean flag pair by the flag it stands for."""
    if isinstance(value, bool):
        return opts[0] if value else secondary[0]
    return str(value)


@pytest.mark.parametrize(("command", "defaults", "flags"), [
    ("audit", {f.name: f.default for f in dataclasses.fields(AuditParams)},
     {"shingle_n": "shingle_n", "num_perm": "num_perm", "jaccard": "jaccard_threshold", "ngram_n": "ngram_n",
      "seed": "seed"}),
    ("clean", {f.name: f.default for f in dataclasses.fields(CleaningPolicy)},
     {"drop_jaccard": "drop_cross_jaccard", "drop_containment": "drop_cross_containment",
      "drop_structural": "drop_structural", "reshuffle": "reshuffle_options", "seed": "seed",
      "quarantine_oracle": "quarantine_oracle"}),
    ("variants", {f.name: f.default for f in dataclasses.fields(Settings)},
     {"max_order": "max_order", "seed": "seed", "n_per_story": "n_per_story", "balance": "balance"}),
    ("generate", {"max_order": DEFAULT_MAX_ORDER, "styles": ",".join(STYLES), "source": DEFAULT_SOURCE},
     {"max_order": "max_order", "styles": "styles", "source": "source"}),
    ("scan", {f.name: f.default for f in dataclasses.fields(ScanParams)},
     {"jaccard": "jaccard_threshold", "containment": "containment_threshold", "alpha": "ngram_alpha",
      "batch_docs": "batch_docs"}),
])
def test_unset_flags_defer_to_the_settings_and_help_shows_their_defaults(
    command: str, defaults: dict[str, object], flags: dict[str, str]
) -> None:
    params = shown(command)
    for flag, setting in flags.items():
        value, help_default, opts, secondary = params[flag]
        assert value is None, (command, flag)
        assert help_default == shown_default(defaults[setting], opts, secondary), (command, flag)


def test_given_keeps_only_the_flags_set() -> None:
    assert given(a=None, b=0, c=False, d="x") == {"b": 0, "c": False, "d": "x"}
    assert AuditParams(**given(shingle_n=None, seed=3)) == AuditParams(seed=3)


def test_operator_selections_read_the_same_in_the_cli_and_the_config() -> None:
    from tomforge.flows.config import GenerateConfig
    from tomforge.generators.operators import OPERATORS, selected_operators

    every = list(OPERATORS)
    cases = {"all": every, "none": [], "lie, distractor": ["lie", "distractor"], "lie,none": ["lie"], "": []}
    for text, expected in cases.items():
        assert selected_operators(text.split(",")) == expected, text
    assert GenerateConfig(operators=["all"]).operator_names == every
    assert GenerateConfig(operators=["none"]).operator_names == []
    assert GenerateConfig(operators=["lie"]).operator_names == ["lie"]
