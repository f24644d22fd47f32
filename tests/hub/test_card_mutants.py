"""hub/card.py against hand-written text (issue 38: mutmut over a module the independent checks hit): license ids,
size categories at their bounds, the `configs` entries, and each section of the card body on hand-made exports,
facts, audits and ledgers, every expected line written out here."""

from __future__ import annotations

import pytest

from tomforge.hub import card
from tomforge.hub.export import Shard, SplitExport
from tomforge.warehouse.sources.registry import SOURCES


def export(config: str, split: str, n_rows: int, source_split: str | None = None, shards: int = 1) -> SplitExport:
    files = tuple(Shard(f"data/{config}/{split}-{i:05d}-of-{shards:05d}.parquet", 1) for i in range(shards))
    return SplitExport(config, split, source_split or split, n_rows, files)


@pytest.mark.parametrize(
    ("published", "hub_id"),
    [
        (None, "unknown"),
        ("", "unknown"),
        ("   ", "unknown"),
        ("CC BY-NC 4.0 (not for training)", "cc-by-nc-4.0"),
        ("MIT", "mit"),
        ("CC0", "cc0-1.0"),
        ("Apache", "apache-2.0"),
        ("Apache 2", "apache-2.0"),
        ("apache_2.0", "apache-2.0"),
        ("CC  BY_SA 4.0", "cc-by-sa-4.0"),
        ("cc-by -4.0", "cc-by-4.0"),
        ("(research only) CC-BY-4.0 (see paper)", "cc-by-4.0"),
        ("Proprietary", "other"),
    ],
)
def test_a_published_license_becomes_its_hub_id(published: str | None, hub_id: str) -> None:
    assert card.hub_license(published) == hub_id


@pytest.mark.parametrize(
    ("n", "label"),
    [
        (0, "n<1K"),
        (999, "n<1K"),
        (1_000, "1K<n<10K"),
        (9_999, "1K<n<10K"),
        (10_000, "10K<n<100K"),
        (100_000, "100K<n<1M"),
        (1_000_000, "1M<n<10M"),
        (10_000_000, "10M<n<100M"),
        (99_999_999, "10M<n<100M"),
        (100_000_000, "n>100M"),
    ],
)
def test_size_categories_at_their_bounds(n: int, label: str) -> None:
    assert card.size_category(n) == label


EXPORTS = [
    export("alpha", "train", 7),
    export("alpha", "validation", 2, source_split="val"),
    export("beta", "test", 4, source_split="dev, test", shards=2),
    export("all", "train", 7),
    export("all", "validation", 2),
    export("all", "test", 1_000),
]
FACTS = [
    {"source": "alpha", "versions": ["a-1", "a-2"], "license": "MIT", "hub_repo": "org/alpha", "n_items": 9},
    {"source": "tomi", "versions": [], "license": None, "n_items": 4},
]


def test_configs_yaml_has_a_glob_per_split_and_all_is_the_default() -> None:
    assert card.configs_yaml(EXPORTS) == [
        {
            "config_name": "alpha",
            "data_files": [
                {"split": "train", "path": "data/alpha/train-*.parquet"},
                {"split": "validation", "path": "data/alpha/validation-*.parquet"},
            ],
        },
        {"config_name": "beta", "data_files": [{"split": "test", "path": "data/beta/test-*.parquet"}]},
        {
            "config_name": "all",
            "default": True,
            "data_files": [
                {"split": "train", "path": "data/all/train-*.parquet"},
                {"split": "validation", "path": "data/all/validation-*.parquet"},
                {"split": "test", "path": "data/all/test-*.parquet"},
            ],
        },
    ]


def test_card_data_counts_the_all_config_and_lists_several_licenses() -> None:
    data = card.card_data(EXPORTS, FACTS, "ToM").to_dict()
    assert data["pretty_name"] == "ToM"
    assert data["license"] == ["mit", "unknown"]
    assert data["language"] == ["en"]
    assert data["task_categories"] == ["question-answering", "multiple-choice", "text-generation"]
    assert data["tags"] == ["theory-of-mind", "reasoning", "rlvr", "tomforge"]
    assert data["size_categories"] == ["1K<n<10K"]  # 7 + 2 + 1,000 in `all`; the source configs not counted again
    one = card.card_data(EXPORTS[:1], FACTS[:1], "ToM").to_dict()
    assert one["license"] == "mit"
    assert one["size_categories"] == ["n<1K"]  # no `all` config: nothing counted


def test_the_configs_section_names_each_split_and_its_source_names() -> None:
    assert card._configs_section(EXPORTS, FACTS) == (
        "| config | holds | split | rows | files |\n"
        "|---|---|---|---|---|\n"
        "| `alpha` | `alpha` (version a-1, a-2) | `train` | 7 | 1 |\n"
        "| `alpha` | `alpha` (version a-1, a-2) | `validation` (source split `val`) | 2 | 1 |\n"
        "| `beta` | `beta` (version ?) | `test` (source splits `dev, test`) | 4 | 2 |\n"
        "| `all` | every source together | `train` | 7 | 1 |\n"
        "| `all` | every source together | `validation` | 2 | 1 |\n"
        "| `all` | every source together | `test` | 1000 | 1 |\n\n"
        "Split names follow one vocabulary in every config: a source's own name for its validation split (`val`, "
        "`valid`, `dev`) is published as `validation`, other characters as `_`; each row's `split` column keeps "
        "the name its source uses."
    )
    assert card._configs_section(EXPORTS[:1], FACTS) == (
        "| config | holds | split | rows | files |\n|---|---|---|---|---|\n| `alpha` | `alpha` (version a-1, a-2) | `train` | 7 | 1 |"
    )


def test_a_rows_table_escapes_cells_and_says_how_many_more() -> None:
    rows = [{"a": i, "b": None if i == 0 else "x|y\nz"} for i in range(22)]
    text = card._rows_table(rows)
    lines = text.split("\n")
    assert lines[:4] == ["| a | b |", "|---|---|", "| 0 |  |", "| 1 | x\\|y z |"]
    assert len(lines) == 2 + 20 + 2
    assert lines[-1] == "... and 2 more (see `manifest.json` and the report)."
    assert card._rows_table(rows[:20]).count("\n") == 21  # exactly the limit: no "more" line


VERDICTS = [
    {"status": "pass", "check": "b", "finding": "ok", "action": "none"},
    {"status": "warn", "check": "z", "finding": "w", "action": "look"},
    {"status": "odd", "check": "a", "finding": "?", "action": None},
    {"status": "fail", "check": "y", "finding": "f|g", "action": "fix"},
    {"status": "pass", "check": "a", "finding": "ok", "action": "none"},
]


def test_verdicts_are_listed_failures_first_then_by_check() -> None:
    assert card._verdict_table(VERDICTS) == (
        "| status | check | finding | action |\n"
        "|---|---|---|---|\n"
        "| FAIL | y | f\\|g | fix |\n"
        "| warn | z | w | look |\n"
        "| pass | a | ok | none |\n"
        "| pass | b | ok | none |\n"
        "| odd | a | ? |  |"
    )


def test_a_release_without_an_audit_says_so() -> None:
    assert card._audit_section({"ran": False}, [], "items_full") == (
        "Rows come from the warehouse table `items_full`. No audit was run on this release: no `audit_*` tables "
        "were in the warehouse it was built from. Check overlap between splits yourself before trusting held-out "
        "scores."
    )


def test_an_audited_release_lists_runs_verdicts_findings_cleaning_and_tables() -> None:
    audit = {
        "ran": True,
        "runs": [
            {
                "run_id": "r1",
                "train_where": "split = 'train'",
                "n_train": 10,
                "heldout_where": "split = 'test'",
                "n_heldout": 4,
                "n_in_both": 1,
                "n_findings": 3,
            }
        ],
        "verdicts": VERDICTS[3:4],
        "findings": [{"kind": "x"}] * 2,  # the manifest keeps some findings; the table's count is the whole
        "cleaning": [{"selection": "train", "kept": 9, "removed": 1}],
        "tables": {"audit_findings": 3, "audit_runs": 1},
    }
    ledger = {"totals": {"not_audited": 2}}
    text = card._audit_section(audit, ["audit/report.md", "audit/report.html"], "clean_items", ledger)
    assert text == (
        "Rows come from the warehouse table `clean_items` (the audit's cleaned selections) and, unchanged, the "
        "items outside the audit's selections (`audit_selection` = `not_audited`).\n\n"
        "Audit run `r1`: train side `split = 'train'` (10 items), held-out side `split = 'test'` (4 items), "
        "1 in both, 3 findings.\n\n"
        "Verdict (one line per check, failures first; the evidence is in the audit report):\n\n"
        "| status | check | finding | action |\n|---|---|---|---|\n| FAIL | y | f\\|g | fix |\n\n"
        "Findings: 3 rows in `audit_findings` (listed in `manifest.json` and the audit report).\n\n"
        "Cleaning (items selected, kept and removed, by reason):\n\n"
        "| selection | kept | removed |\n|---|---|---|\n| train | 9 | 1 |\n\n"
        "Audit tables in the warehouse (rows): `audit_findings` 3, `audit_runs` 1.\n\n"
        "The full audit report is part of this release: [audit/report.md](audit/report.md), "
        "[audit/report.html](audit/report.html). Start with [audit/report.html](audit/report.html): the verdict "
        "first, figures embedded, opens in a browser."
    )


def test_an_old_audit_shows_its_raw_findings_and_no_findings_is_said() -> None:
    old = {"ran": True, "findings": [{"kind": "x", "n": 2}], "tables": {}}
    assert card._audit_section(old, ["r.md"], "clean_items", {"totals": {"not_audited": 0}}) == (
        "Rows come from the warehouse table `clean_items` (the audit's cleaned selections).\n\n"
        "Findings:\n\n| kind | n |\n|---|---|\n| x | 2 |\n\n"
        "Audit tables in the warehouse (rows): .\n\n"
        "The full audit report is part of this release: [r.md](r.md)."
    )
    assert card._audit_section({"ran": True, "verdicts": VERDICTS[:1], "findings": [1, 2]}, [], "items_full") == (
        "Rows come from the warehouse table `items_full`.\n\n"
        "Verdict (one line per check, failures first; the evidence is in the audit report):\n\n"
        "| status | check | finding | action |\n|---|---|---|---|\n| pass | b | ok | none |\n\n"
        "Findings: 2 rows in `audit_findings` (listed in `manifest.json` and the audit report).\n\n"
        "Audit tables in the warehouse (rows): ."
    )
    assert card._audit_section({"ran": True}, [], "items_full") == (
        "Rows come from the warehouse table `items_full`.\n\nFindings: none.\n\nAudit tables in the warehouse (rows): ."
    )


LEDGER = {
    "rows": [
        {"source": "alpha", "split": "train", "warehouse": 8, "released": 6, "removed": 2, "not_audited": 0}
        | {"reasons": {"label_conflict": 1, "overlap": 1}},
        {
            "source": "beta",
            "split": "test",
            "warehouse": 4,
            "released": 4,
            "removed": 0,
            "not_audited": 4,
            "reasons": {},
        },
    ],
    "totals": {"warehouse": 12, "released": 10, "removed": 2, "not_audited": 4},
    "unaudited": "published",
}


def test_the_ledger_section_adds_up_per_source_and_split() -> None:
    table = (
        "| source | split | warehouse | released | removed | removed by reason | not audited |\n"
        "|---|---|---|---|---|---|---|\n"
        "| `alpha` | `train` | 8 | 6 | 2 | label_conflict 1, overlap 1 | 0 |\n"
        "| `beta` | `test` | 4 | 4 | 0 |  | 4 |\n"
        "| **total** |  | 12 | 10 | 2 |  | 4 |"
    )
    head = (
        "Every item of the warehouse this release was built from is either in the release or in "
        "`ledger/removed.parquet` with the reason it was removed. Items outside the audit's selections were "
    )
    tail = ". Released and removed are counted by reading the written files back.\n\n"
    assert card._ledger_section(LEDGER) == (
        head + "published unchanged (column `audit_selection` = `not_audited`)" + tail + table
    )
    assert (
        card._ledger_section(LEDGER | {"unaudited": "removed"})
        == head + "removed (reason `not_selected`)" + tail + table
    )
    assert card._ledger_section(None) == "No ledger was recorded for this release."


def test_the_sources_section_and_citations() -> None:
    assert card._sources_section(FACTS) == (
        "| source | version | license as published | Hub id | upstream | items |\n"
        "|---|---|---|---|---|---|\n"
        "| `alpha` | a-1, a-2 | MIT | `mit` | org/alpha | 9 |\n"
        "| `tomi` |  | not stated | `unknown` |  | 4 |\n\n"
        "Each config keeps the license its source publishes; restrictions in parentheses (for example evaluation "
        "only) apply to that config and to `all`."
    )
    assert (
        card._sources_section([{"source": "x", "n_items": 1}]).split("\n")[2]
        == "| `x` |  | not stated | `unknown` |  | 1 |"
    )
    tomi, hitom = SOURCES.citations()["tomi"], SOURCES.citations()["hitom"]
    both = [{"source": "hitom"}, {"source": "x"}, {"source": "tomi"}, {"source": "y"}]
    assert card._citations_section(both) == (
        f"```bibtex\n{hitom}\n```\n\n```bibtex\n{tomi}\n```\n\nNo citation recorded for: `x`, `y`."
    )
    assert card._citations_section(FACTS) == f"```bibtex\n{tomi}\n```\n\nNo citation recorded for: `alpha`."
    assert card._citations_section(FACTS[1:]) == f"```bibtex\n{tomi}\n```"
    assert card._citations_section(FACTS[:1]) == "No upstream source to cite.\n\nNo citation recorded for: `alpha`."


def test_the_card_loads_the_all_config_and_says_the_override_before_the_citation() -> None:
    text = card.build_card(
        repo_id="org/tom",
        tag="v1",
        pretty_name="ToM",
        exports=EXPORTS,
        facts=FACTS,
        audit={"ran": False},
        training_override=["`beta` (CC BY-NC 4.0)", "`gamma` (eval only)"],
    )
    assert text.startswith("---\n") and "\nconfig_name: all\n  default: true\n" in text.replace(
        "- config_name", "config_name"
    )
    assert 'ds = load_dataset("org/tom", "all", split="train", revision="v1")' in text
    assert "`tomforge verify --repo org/tom --revision v1` checks them." in text
    note = (
        "**License override.** This release was published with `--allow-restricted-training`: `beta` (CC BY-NC "
        "4.0); `gamma` (eval only) in the `train` split, although its license forbids training. Check the license "
        "before training on this split."
    )
    assert f"\n\n{note}\n\n## Citation\n" in text
    assert (
        "No ledger was recorded for this release." in text
        and "Rows come from the warehouse table `items_full`." in text
    )
    plain = card.build_card(repo_id="org/tom", tag="v1", pretty_name="ToM", exports=EXPORTS[:1], facts=FACTS, audit={})
    assert "License override" not in plain
    assert 'load_dataset("org/tom", "alpha", split="train", revision="v1")' in plain  # no `all`: the first export


def test_the_card_carries_its_name_report_links_and_ledger() -> None:
    text = card.build_card(
        repo_id="org/tom",
        tag="v1",
        pretty_name="Theory of Mind v1",
        exports=EXPORTS,
        facts=FACTS,
        audit={"ran": False},
        report_paths=["audit/report.md"],
        table="clean_items",
        ledger=LEDGER,
    )
    assert "\npretty_name: Theory of Mind v1\n" in text and "\n# Theory of Mind v1\n" in text
    assert "The full audit report is part of this release: [audit/report.md](audit/report.md)." in text
    assert "| `alpha` | `train` | 8 | 6 | 2 | label_conflict 1, overlap 1 | 0 |" in text
    assert (
        "Rows come from the warehouse table `clean_items` (the audit's cleaned selections) and, unchanged, the items "
        "outside the audit's selections (`audit_selection` = `not_audited`)."
    ) in text


def test_the_body_reads_items_full_unless_told() -> None:
    body = card.render_body(
        repo_id="o/t", tag="v", pretty_name="T", exports=EXPORTS, facts=[], audit={}, report_paths=[]
    )
    assert "Rows come from the warehouse table `items_full`. No audit was run" in body
