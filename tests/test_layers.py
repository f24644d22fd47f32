"""Imports follow ARCHITECTURE.md's layers: a module imports its own layer or a lower one, never a higher one.

The cycle test (`test_import_cycles.py`) allows A -> B as long as B never leads back to A; this test also
fixes the direction. The layer of each module is written out below, in the order of ARCHITECTURE.md's
"Layers" table (the longest matching prefix wins), and every project module must have one, so a new
module is placed deliberately. Imports inside functions count, as in the cycle test. Each folder is one
layer; the one split kept inside a layer, a source's reading apart from its storage, is `READING_PART`.
"""

from __future__ import annotations

from tests.test_import_cycles import REPO, imported_modules, project_modules

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (  # lowest first
    # one folder per layer (issue 39)
    (
        "record contract",
        (
            "tomforge",  # the package itself (its version), this module only: see EXACT
            # the errors, the record and its columns, the RL columns, licenses and the world model a trace is
            # written in: what every layer, the GPU machine's reward included, reads
            "tomforge.schemas",
        ),
    ),
    # the sources read (`sources/`, `batch.py`) and stored (the rest): nothing of it imports the generator
    ("warehouse", ("tomforge.warehouse",)),
    # generated records enter as a source's do (the adapters' contract); `real/store.py` writes the variants
    ("generation", ("tomforge.generators",)),
    ("analysis", ("tomforge.audits",)),
    ("release", ("tomforge.hub",)),
    ("training", ("tomforge.rl",)),
    ("front ends", ("tomforge.flows",)),
)
# placed as that module alone, not as a prefix: the namespace's own `__init__` (every module's name starts
# with it, and each other module is placed by its own entry)
EXACT = {"tomforge"}
# the one documented exception: the RL stage stores its evaluation rows in the warehouse (`eval_results`)
ALLOWED_UPWARD = {
    ("tomforge.rl.evaluate", "tomforge.warehouse"),
    ("tomforge.rl.evaluate", "tomforge.warehouse.db"),
    ("tomforge.rl.evaluate", "tomforge.warehouse.faults"),
}  # its write's kill points (issue 25)
# training reads a release (a folder or the Hub), never the warehouse, the audit or the generator
TRAINING_NEVER_IMPORTS = ("warehouse", "generation", "analysis")
# a source is read into records without the storage (the rest of warehouse/: load, db, ingest...), and so is
# generated: of the warehouse, the generator imports the reading part only, but for the variants step's writes
READING_PART = ("tomforge.warehouse.sources", "tomforge.warehouse.batch")
STORES_ITS_RECORDS = {"tomforge.generators.real.store"}


def layer_of(module: str) -> int:
    best, found = "", -1
    for rank, (_name, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if prefix in EXACT and module != prefix:
                continue
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
                best, found = prefix, rank
    return found


def project_edges() -> list[tuple[str, str]]:
    modules = project_modules()
    known = set(modules)
    return [
        (name, target)
        for name, path in sorted(modules.items())
        for target in sorted(imported_modules(name, path, known))
    ]


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes)


def reads_without_storing(name: str, target: str) -> bool:
    """Whether `name` is the reading part or the generator and `target` the warehouse's storage part."""
    reader = _within(name, READING_PART) or (_within(name, ("tomforge.generators",)) and name not in STORES_ITS_RECORDS)
    return reader and _within(target, ("tomforge.warehouse",)) and not _within(target, READING_PART)


def violations(edges: list[tuple[str, str]]) -> list[str]:
    names = [name for name, _ in LAYERS]
    found = []
    for name, target in edges:
        mine, theirs = layer_of(name), layer_of(target)
        if (name, target) in ALLOWED_UPWARD:
            continue
        if theirs > mine or (names[mine] == "training" and names[theirs] in TRAINING_NEVER_IMPORTS):
            found.append(f"{name} ({names[mine]}) imports {target} ({names[theirs]})")
        elif reads_without_storing(name, target):
            found.append(f"{name} (reads records) imports {target} (stores them)")
    return found


def test_every_module_has_a_layer() -> None:
    assert [m for m in project_modules() if layer_of(m) < 0] == []


def test_folders_are_layers_and_the_root_holds_no_module() -> None:
    """Folders are layers (issue 39): `tomforge/` holds its `__init__` and the folders' links only (its former
    `errors.py`, `atomic_files.py` and `flag_fields.py` are the record contract's, in `schemas/`), and every
    module of every folder has its folder's layer, so no module of a lower layer hides in a higher folder (the old
    `warehouse/export.py`, `rl/columns.py`) and no folder spans two layers (the old `generators/`, read beside
    `warehouse/sources/` but for `generators/real/store.py`, stored beside the rest of `warehouse/`). The root
    package is placed alone, so an unplaced module still has no layer."""
    modules = project_modules()
    assert {"tomforge", "tomforge.schemas.errors", "tomforge.schemas.atomic_files"} <= set(modules)
    assert {m for m in modules if m.count(".") == 1 and not (REPO / m.split(".")[1]).is_dir()} == set()
    assert layer_of("tomforge.a_new_module") == -1 and layer_of("tomforge") == 0
    names = [name for name, _ in LAYERS]
    # ARCHITECTURE.md's rows, written out: a folder missing here is wrong too
    folder_layer = {"schemas": 0, "warehouse": 1, "generators": 2, "audits": 3, "hub": 4, "rl": 5, "flows": 6}
    wrong = [m for m in modules if m.count(".") and folder_layer.get(m.split(".")[1], -1) != layer_of(m)]
    assert wrong == [] and names[layer_of("tomforge.schemas.world.checker")] == "record contract"
    assert names[layer_of("tomforge.generators.real.store")] == "generation"
    edges = project_edges()
    assert ("tomforge.warehouse.db", "tomforge.schemas.errors") in edges  # `from tomforge.schemas.errors import`
    planted = [("tomforge.schemas.errors", "tomforge.warehouse.db"), ("tomforge.schemas.rl.licenses", "tomforge.rl")]
    assert [v.split(" ")[0] for v in violations(planted)] == ["tomforge.schemas.errors", "tomforge.schemas.rl.licenses"]


def test_no_import_against_the_layers() -> None:
    assert violations(project_edges()) == []


def test_planted_imports_are_judged_by_the_table() -> None:
    planted = [
        ("tomforge.hub.export", "tomforge.rl.trl_backend"),  # release -> training: up
        ("tomforge.rl.stage", "tomforge.warehouse.load"),  # training -> storage: never
        ("tomforge.generators.generate", "tomforge.audits.run"),  # sources -> analysis: up
        ("tomforge.rl.evaluate", "tomforge.warehouse.db"),  # the eval_results exception
        ("tomforge.hub.publish", "tomforge.hub.export"),  # same layer
        ("tomforge.flows.cli", "tomforge.rl.stage"),  # down
        ("tomforge.hub.export", "tomforge.schemas.rl.columns"),  # release -> record contract
        ("tomforge.warehouse.load", "tomforge.generators.generate"),  # warehouse -> generation: up
        ("tomforge.rl.reward", "tomforge.generators.world"),  # training -> generation: never
        ("tomforge.generators.generate", "tomforge.warehouse.load"),  # a generator storing its records
        ("tomforge.warehouse.sources.hitom", "tomforge.warehouse.db"),  # a source read into the warehouse
        ("tomforge.warehouse.batch", "tomforge.warehouse"),  # the warehouse package is the storage part
        ("tomforge.generators.real.store", "tomforge.warehouse.load"),  # the variants step's writes
        ("tomforge.generators.real.tomi", "tomforge.warehouse.sources.tomi"),  # the adapters' grammar
        ("tomforge.warehouse.load", "tomforge.warehouse.sources.base"),  # storage reads the contract
    ]
    found = violations(planted)
    assert [v.split(" ")[0] for v in found] == [
        "tomforge.hub.export",
        "tomforge.rl.stage",
        "tomforge.generators.generate",
        "tomforge.warehouse.load",
        "tomforge.rl.reward",
        "tomforge.generators.generate",
        "tomforge.warehouse.sources.hitom",
        "tomforge.warehouse.batch",
    ]
    assert found[5] == "tomforge.generators.generate (reads records) imports tomforge.warehouse.load (stores them)"


def test_the_rl_reward_path_needs_none_of_the_warehouse_dependencies() -> None:
    """The GPU machine has torch and transformers, not duckdb, polars, jsonschema or orjson: the reward,
    the process reward (the world model included) and the evaluation must import without them."""
    import subprocess
    import sys

    heavy = ("duckdb", "polars", "jsonschema", "jsonschema_rs", "orjson", "prefect")
    code = (
        "import sys\n"
        "import tomforge.rl.reward, tomforge.rl.process_reward, tomforge.rl.evaluate\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout
