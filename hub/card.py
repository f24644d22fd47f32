"""The dataset card (README.md) of a release, written with `huggingface_hub`'s card utilities.

The YAML header is what `datasets.load_dataset` and the Hub read (configs and their data files,
licenses, task and size categories); the body is what a researcher reads before training on it:
what each config holds, counts per split, the audit summary, how to load a release and whom to cite.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Sequence

from tomforge.hub.export import ALL_CONFIG, SplitExport
from tomforge.warehouse.sources.registry import SOURCES

# Hub license identifiers (https://huggingface.co/docs/hub/repositories-licenses) the sources use.
HUB_LICENSES = frozenset(
    {
        "apache-2.0",
        "mit",
        "cc0-1.0",
        "cc-by-4.0",
        "cc-by-sa-4.0",
        "cc-by-nc-4.0",
        "cc-by-nc-sa-4.0",
        "cc-by-nc-nd-4.0",
        "cc-by-3.0",
        "cc-by-sa-3.0",
        "cc-by-nc-3.0",
        "bsd-2-clause",
        "bsd-3-clause",
        "gpl-3.0",
        "lgpl-3.0",
        "odc-by",
        "odbl",
        "pddl",
        "unknown",
        "other",
    }
)
TASK_CATEGORIES = ["question-answering", "multiple-choice", "text-generation"]
TAGS = ["theory-of-mind", "reasoning", "rlvr", "tomforge"]
_SIZE_BOUNDS = [
    (1_000, "n<1K"),
    (10_000, "1K<n<10K"),
    (100_000, "10K<n<100K"),
    (1_000_000, "100K<n<1M"),
    (10_000_000, "1M<n<10M"),
    (100_000_000, "10M<n<100M"),
]


def hub_license(published: str | None) -> str:
    """The Hub identifier of a license as a source words it ("CC BY-NC 4.0 (not for training)" ->
    "cc-by-nc-4.0"); "other" when it has none, "unknown" when the source states none."""
    if not published or not published.strip():
        return "unknown"
    core = re.sub(r"\(.*?\)", "", published).strip().lower()
    core = re.sub(r"[\s_]+", "-", core).replace("--", "-")
    core = {"cc0": "cc0-1.0", "apache": "apache-2.0", "apache-2": "apache-2.0"}.get(core, core)
    return core if core in HUB_LICENSES else "other"


def size_category(n_rows: int) -> str:
    for bound, label in _SIZE_BOUNDS:
        if n_rows < bound:
            return label
    return "n>100M"


def configs_yaml(exports: Iterable[SplitExport]) -> list[dict[str, Any]]:
    """`configs` entries: one per config, a glob per split (stale shards are deleted on publish)."""
    by_config: dict[str, list[SplitExport]] = {}
    for export in exports:
        by_config.setdefault(export.config, []).append(export)
    entries = []
    for config, splits in by_config.items():
        entry: dict[str, Any] = {"config_name": config}
        if config == ALL_CONFIG:
            entry["default"] = True
        entry["data_files"] = [{"split": s.split, "path": f"data/{config}/{s.split}-*.parquet"} for s in splits]
        entries.append(entry)
    return entries


def _license_list(facts: list[dict[str, Any]]) -> list[str]:
    return sorted({hub_license(fact.get("license")) for fact in facts})


def card_data(exports: list[SplitExport], facts: list[dict[str, Any]], pretty_name: str):
    from huggingface_hub import DatasetCardData

    total = sum(e.n_rows for e in exports if e.config == ALL_CONFIG)
    licenses = _license_list(facts)
    return DatasetCardData(
        pretty_name=pretty_name,
        license=licenses[0] if len(licenses) == 1 else licenses,
        language=["en"],
        task_categories=TASK_CATEGORIES,
        size_categories=[size_category(total)],
        tags=TAGS,
        configs=configs_yaml(exports),
    )


def _table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _configs_section(exports: list[SplitExport], facts: list[dict[str, Any]]) -> str:
    by_source = {fact["source"]: fact for fact in facts}
    rows = []
    for export in exports:
        if export.config == ALL_CONFIG:
            holds = "every source together"
        else:
            fact = by_source.get(export.config, {})
            versions = ", ".join(fact.get("versions", [])) or "?"
            holds = f"`{export.config}` (version {versions})"
        renamed = (
            ""
            if export.split == export.source_split
            else f" (source split{'s' if ', ' in export.source_split else ''} `{export.source_split}`)"
        )
        rows.append([f"`{export.config}`", holds, f"`{export.split}`{renamed}", export.n_rows, len(export.shards)])
    table = _table(["config", "holds", "split", "rows", "files"], rows)
    if any(export.split != export.source_split for export in exports):
        table += (
            "\n\nSplit names follow one vocabulary in every config: a source's own name for its validation "
            "split (`val`, `valid`, `dev`) is published as `validation`, other characters as `_`; each row's "
            "`split` column keeps the name its source uses."
        )
    return table


def _cell(value: Any) -> str:
    return str("" if value is None else value).replace("|", "\\|").replace("\n", " ")


def _rows_table(rows: list[dict[str, Any]], limit: int = 20) -> str:
    columns = list(rows[0])
    table = _table(columns, [[_cell(row.get(c)) for c in columns] for row in rows[:limit]])
    more = f"\n\n... and {len(rows) - limit} more (see `manifest.json` and the report)." if len(rows) > limit else ""
    return table + more


def _audit_section(
    audit: dict[str, Any], report_paths: list[str], table: str, ledger: dict[str, Any] | None = None
) -> str:
    source = f"Rows come from the warehouse table `{table}`"
    source += " (the audit's cleaned selections)" if table.startswith("clean") else ""
    if table.startswith("clean") and ledger and ledger["totals"]["not_audited"]:
        source += " and, unchanged, the items outside the audit's selections (`audit_selection` = `not_audited`)"
    source += "."
    if not audit.get("ran"):
        text = (
            f"{source} No audit was run on this release: no `audit_*` tables were in the warehouse it was built "
            "from. Check overlap between splits yourself before trusting held-out scores."
        )
    else:
        parts = [source]
        for run in audit.get("runs", []):
            parts.append(
                f"Audit run `{run.get('run_id')}`: train side `{run.get('train_where')}` ({run.get('n_train')} "
                f"items), held-out side `{run.get('heldout_where')}` ({run.get('n_heldout')} items), "
                f"{run.get('n_in_both')} in both, {run.get('n_findings')} findings."
            )
        if audit.get("verdicts"):
            parts += [
                "Verdict (one line per check, failures first; the evidence is in the audit report):",
                _verdict_table(audit["verdicts"]),
            ]
        if audit.get("findings"):
            parts.append(
                f"Findings: {audit.get('tables', {}).get('audit_findings', len(audit['findings']))} rows in "
                "`audit_findings` (listed in `manifest.json` and the audit report)."
                if audit.get("verdicts")
                else "Findings:"
            )
            if not audit.get("verdicts"):  # an audit from before verdicts were stored: its raw findings
                parts.append(_rows_table(audit["findings"]))
        else:
            parts.append("Findings: none.")
        if audit.get("cleaning"):
            parts += ["Cleaning (items selected, kept and removed, by reason):", _rows_table(audit["cleaning"])]
        parts += [
            "Audit tables in the warehouse (rows): "
            + ", ".join(f"`{name}` {n}" for name, n in audit.get("tables", {}).items())
            + "."
        ]
        text = "\n\n".join(parts)
    if report_paths:
        links = ", ".join(f"[{path}]({path})" for path in report_paths)
        text += f"\n\nThe full audit report is part of this release: {links}."
        html_pages = [path for path in report_paths if path.endswith(".html")]
        if html_pages:
            text += f" Start with [{html_pages[0]}]({html_pages[0]}): the verdict first, figures embedded, opens in a browser."
    return text


_STATUS_ORDER = {"fail": 0, "warn": 1, "pass": 2}


def _verdict_table(verdicts: list[dict[str, Any]]) -> str:
    rows = sorted(verdicts, key=lambda v: (_STATUS_ORDER.get(str(v.get("status")), 3), str(v.get("check"))))
    return _table(
        ["status", "check", "finding", "action"],
        [
            [
                _cell(str(v.get("status", "")).upper() if v.get("status") == "fail" else v.get("status")),
                _cell(v.get("check")),
                _cell(v.get("finding")),
                _cell(v.get("action")),
            ]
            for v in rows
        ],
    )


def _ledger_section(ledger: dict[str, Any] | None) -> str:
    """warehouse = released + removed per source and split; removals by reason."""
    if not ledger:
        return "No ledger was recorded for this release."
    rows = [
        [
            f"`{r['source']}`",
            f"`{r['split']}`",
            r["warehouse"],
            r["released"],
            r["removed"],
            ", ".join(f"{reason} {n}" for reason, n in r["reasons"].items()),
            r["not_audited"],
        ]
        for r in ledger["rows"]
    ]
    total = ledger["totals"]
    rows.append(["**total**", "", total["warehouse"], total["released"], total["removed"], "", total["not_audited"]])
    outside = (
        "published unchanged (column `audit_selection` = `not_audited`)"
        if ledger["unaudited"] == "published"
        else "removed (reason `not_selected`)"
    )
    return (
        f"Every item of the warehouse this release was built from is either in the release or in "
        f"`ledger/removed.parquet` with the reason it was removed. Items outside the audit's selections were "
        f"{outside}. Released and removed are counted by reading the written files back.\n\n"
        + _table(["source", "split", "warehouse", "released", "removed", "removed by reason", "not audited"], rows)
    )


def _sources_section(facts: list[dict[str, Any]]) -> str:
    rows = [
        [
            f"`{f['source']}`",
            ", ".join(f.get("versions", [])),
            f.get("license") or "not stated",
            f"`{hub_license(f.get('license'))}`",
            f.get("hub_repo") or "",
            f["n_items"],
        ]
        for f in facts
    ]
    table = _table(["source", "version", "license as published", "Hub id", "upstream", "items"], rows)
    return (
        table + "\n\nEach config keeps the license its source publishes; restrictions in parentheses "
        "(for example evaluation only) apply to that config and to `all`."
    )


def _citations_section(facts: list[dict[str, Any]]) -> str:
    citations = SOURCES.citations()  # declared with each source (`warehouse.sources.registry`)
    blocks = [citations[f["source"]] for f in facts if f["source"] in citations]
    unknown = [f["source"] for f in facts if f["source"] not in citations]
    text = "\n\n".join(f"```bibtex\n{block}\n```" for block in blocks) or "No upstream source to cite."
    if unknown:
        text += "\n\nNo citation recorded for: " + ", ".join(f"`{s}`" for s in unknown) + "."
    return text


def render_body(
    *,
    repo_id: str,
    tag: str,
    pretty_name: str,
    exports: list[SplitExport],
    facts: list[dict[str, Any]],
    audit: dict[str, Any],
    report_paths: list[str],
    table: str = "items_full",
    ledger: dict[str, Any] | None = None,
) -> str:
    first = next((e for e in exports if e.config == ALL_CONFIG), exports[0])
    return f"""# {pretty_name}

Theory-of-Mind questions from several public benchmarks (and generated data, where present), normalized
into one record per question by tomforge. Every row also carries RL-ready columns
(`prompt` as chat messages, `data_source`, `ability`, `reward_model`, `extra_info`, `answer`), so the same
files feed `datasets`, verl and TRL. Location questions whose story tomforge's world model holds (generated
ones, HiToM, ToMi, ExploreToM) also carry a belief-state rationale (`rationale`, JSON; `rationale_text`, one
reasoning text per form) and, in `reward_model.ground_truth`, the world a process reward checks reasoning
against (other rows: null). This is release `{tag}`.

## Configs and splits

{_configs_section(exports, facts)}

## Loading a release

```python
from datasets import load_dataset

ds = load_dataset("{repo_id}", "{first.config}", split="{first.split}", revision="{tag}")
```

Pass `revision=` with a release tag to get exactly the rows of that release; `main` moves with new releases.
`manifest.json` lists the sha256 of every file; `tomforge verify --repo {repo_id} --revision {tag}` checks them.

## Audit

{_audit_section(audit, report_paths, table, ledger)}

## Ledger: warehouse = released + removed

{_ledger_section(ledger)}

## Sources and licenses

{_sources_section(facts)}

## Citation

{_citations_section(facts)}
"""


def build_card(
    *,
    repo_id: str,
    tag: str,
    pretty_name: str,
    exports: list[SplitExport],
    facts: list[dict[str, Any]],
    audit: dict[str, Any],
    report_paths: Sequence[str] = (),
    table: str = "items_full",
    ledger: dict[str, Any] | None = None,
    training_override: Sequence[str] = (),
) -> str:
    """The README.md text: YAML header from `DatasetCardData`, then the body (`training_override`:
    what `--allow-restricted-training` let into the train split, said under the licenses)."""
    from huggingface_hub import DatasetCard

    data = card_data(exports, facts, pretty_name)
    body = render_body(
        repo_id=repo_id,
        tag=tag,
        pretty_name=pretty_name,
        exports=exports,
        facts=facts,
        audit=audit,
        report_paths=list(report_paths),
        table=table,
        ledger=ledger,
    )
    if training_override:
        body = body.replace("\n## Citation\n", "\n" + _override_note(training_override) + "\n\n## Citation\n", 1)
    return str(DatasetCard(f"---\n{data.to_yaml()}\n---\n\n{body}"))


def _override_note(found: Sequence[str]) -> str:
    return (
        "**License override.** This release was published with `--allow-restricted-training`: "
        + "; ".join(found)
        + " in the `train` split, although its license forbids training. Check the "
        "license before training on this split."
    )
