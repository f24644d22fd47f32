"""The parts `tomforge train` was split into (issue 39), each on hand-made inputs: what it checks before a run, which
release it checks licenses of, the settings fields the flags give each backend, and what it prints."""

from __future__ import annotations

from pathlib import Path

import pytest

from tomforge.flows.commands import rl
from tomforge.flows.commands.field_flags import FlagValues, field_options
from tomforge.rl.trl_settings import TrlSettings
from tomforge.rl.verl_backend import VerlSettings
from tomforge.schemas.errors import TrainingFailed


@pytest.fixture
def calls(monkeypatch) -> list[tuple]:
    """The checks `_check_train_ready` and `_licenses_checked` call, recorded instead of run."""
    seen: list[tuple] = []
    monkeypatch.setattr(rl, "require_rl_extras", lambda *modules: seen.append(("extras", *modules)))
    monkeypatch.setattr("tomforge.rl.models.check_model_spec", lambda model: seen.append(("model", model)))
    monkeypatch.setattr(rl, "check_training_licenses", lambda *args: seen.append(("licenses", *args)))
    return seen


def test_a_trl_run_checks_its_extras_and_model_first(calls: list[tuple]) -> None:
    rl._check_train_ready(rl.Backend.trl, "org/model", dry_run=False)
    assert calls == [("extras", "torch", "trl", "accelerate"), ("model", "org/model")]


@pytest.mark.parametrize(("backend", "dry_run"), [(rl.Backend.trl, True), (rl.Backend.verl, False)])
def test_a_dry_run_or_verl_checks_neither(calls: list[tuple], backend: rl.Backend, dry_run: bool) -> None:
    rl._check_train_ready(backend, "org/model", dry_run=dry_run)
    assert calls == []


def test_licenses_are_checked_unless_a_dry_run_of_a_hub_release(calls: list[tuple], tmp_path: Path) -> None:
    assert rl._licenses_checked("org/tom", "v1", "all/train", False, dry_run=False) is False
    assert rl._licenses_checked(str(tmp_path), "v2", "gen/train", True, dry_run=True) is True
    assert rl._licenses_checked("org/tom", "v1", "all/train", False, dry_run=True) is False  # not downloaded for it
    assert calls == [
        ("licenses", "org/tom", "v1", "all/train", False),
        ("licenses", str(tmp_path), "v2", "gen/train", True),
    ]


def _flags(**given: object) -> FlagValues:
    options = tuple(field_options({"trl": TrlSettings, "verl": VerlSettings}))
    return FlagValues(options, {o.param: given.get(o.param) for o in options})


def test_each_backend_gets_its_own_fields_and_compile_sets_both() -> None:
    flags = _flags(batch_size=16, kl_coef=0.5, epochs=3, compile=False)
    assert rl._overrides(rl.Backend.verl, flags) == {"train_batch_size": 16, "kl_coef": 0.5, "total_epochs": 3}
    assert rl._overrides(rl.Backend.trl, flags) == {
        "beta": 0.5,
        "per_device_train_batch_size": 16,
        "compile_layers": False,
        "compile_rollouts": False,
    }
    assert rl._overrides(rl.Backend.trl, _flags(seed=4)) == {"seed": 4}  # no --compile: neither compile field


def test_a_dry_run_prints_its_plan_and_says_when_licenses_wait(capsys) -> None:
    rl._show_training({"plan": "PLAN"}, dry_run=True, local=True)
    assert capsys.readouterr().out == "PLAN\n"
    rl._show_training({"plan": "PLAN"}, dry_run=True, local=False)
    note = "(licenses of the train split: checked when the training starts, not in a dry run)"
    assert capsys.readouterr().out == f"PLAN\n{note}\n"


def test_a_run_prints_its_steps_and_a_failed_one_is_an_error(monkeypatch) -> None:
    printed: list[str] = []
    monkeypatch.setattr(rl.console, "print", lambda text, **_: printed.append(text))
    rl._show_training({"steps": 12, "seconds": 7.6, "output_dir": "var/rl"}, dry_run=False, local=True)
    assert printed == ["trained 12 steps in 8 s -> var/rl"]
    rl._show_training({}, dry_run=False, local=True)  # no steps reported, no failure: nothing printed
    assert printed == ["trained 12 steps in 8 s -> var/rl"]
    with pytest.raises(TrainingFailed, match=r"^training exited with status 3$"):
        rl._show_training({"exit_code": 3}, dry_run=False, local=True)
