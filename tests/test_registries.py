"""The two registries of issue 39 on hand-made entries: the audit checks' order (family, then definition; a
re-registered class replaces its entry) and the sources' lists, citations and help lines, each expected value
written out by hand."""

from __future__ import annotations

from tomforge.audits.check import AuditCheck, CheckRegistry
from tomforge.warehouse.sources.registry import Source, SourceRegistry


def _check(name: str, module: str) -> type[AuditCheck]:
    return type(name.title().replace(" ", ""), (AuditCheck,), {"name": name, "__module__": module})


def test_checks_come_family_by_family_then_in_definition_order() -> None:
    registry = CheckRegistry(("overlap", "labels"))
    for name, module in [
        ("label one", "tomforge.audits.checks.labels"),
        ("outsider", "tests.somewhere"),  # no family: after every family
        ("overlap one", "tomforge.audits.checks.overlap"),
        ("overlap two", "tomforge.audits.checks.overlap"),
        ("not a family", "tomforge.audits.checks.other"),  # a module of audits.checks not named: after them too
        ("lookalike", "elsewhere.tomforge.audits.checks.overlap"),  # only the package's own modules are families
        ("bare", "overlap"),  # a top-level module of a family's name is none either
    ]:
        registry.add(_check(name, module))
    assert [c.name for c in registry.checks()] == [
        "overlap one",
        "overlap two",
        "label one",
        "outsider",
        "not a family",
        "lookalike",
        "bare",
    ]


def test_registering_a_class_again_replaces_its_entry_in_place() -> None:
    registry = CheckRegistry(("overlap",))
    first = _check("first", "tomforge.audits.checks.overlap")
    registry.add(first)
    registry.add(_check("second", "tomforge.audits.checks.overlap"))
    again = type("First", (AuditCheck,), {"name": "first again", "__module__": "tomforge.audits.checks.overlap"})
    assert registry.add(again) is again  # the decorator hands the class back
    assert [c.name for c in registry.checks()] == ["first again", "second"]
    assert isinstance(registry.checks()[0], again)


SOURCES = SourceRegistry(
    [
        Source("alpha", citation="@misc{a}"),
        Source("beta", note="beta's note", story_note="story only"),
        Source("gamma", citation="@misc{g}", story_note="g story"),
    ]
)


def test_source_names_citations_and_help_lists() -> None:
    assert SOURCES.names() == ("alpha", "beta", "gamma")
    assert SOURCES.citations() == {"alpha": "@misc{a}", "gamma": "@misc{g}"}
    assert SOURCES.help_list() == "alpha, beta (beta's note) or gamma"
    assert SOURCES.help_list(["gamma", "alpha"], story=True) == "gamma (g story) or alpha"
    assert SOURCES.help_list(["beta"]) == "beta (beta's note)"
    assert SOURCES.help_list(["beta"], story=True) == "beta (story only)"


def test_a_source_added_later_comes_last() -> None:
    registry = SourceRegistry([Source("alpha")])
    added = registry.add(Source("omega", citation="@misc{o}", note="new"))
    assert added.name == "omega"
    assert registry.names() == ("alpha", "omega") and registry.help_list() == "alpha or omega (new)"
