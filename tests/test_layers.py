"""Imports follow ARCHITECTURE.md's layers: a module imports its own layer or a lower one, never a higher one.

The cycle test (`test_import_cycles.py`) allows A -> B as long as B never leads back to A; this test also
fixes the direction. The layer of each module is written out below, in the order of ARCHITECTURE.md's
"Layers" table (the longest matching prefix wins), and every project module must have one, so a new
module is placed deliberately. Imports inside functions count, as in the cycle test.
"""

from __future__ import annotations

from tests.test_import_cycles import REPO, imported_modules, project_modules

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (  # lowest first
    # one folder per layer (issue 39), but for the two layers that share warehouse/ and generators/
    (
        "record contract",
        (
            "tomforge",  # the package itself (its version), this module only: see EXACT
            # the errors, the record and its columns, the RL columns, licenses and the world model a trace is
            # written in: what every layer, the GPU machine's reward included, reads
            "tomforge.schemas",
        ),
    ),
    ("reading sources", ("tomforge.warehouse.sources", "tomforge.warehouse.batch", "tomforge.generators")),
    ("storage", ("tomforge.warehouse", "tomforge.generators.real.store")),
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
TRAINING_NEVER_IMPORTS = ("reading sources", "storage", "analysis")


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


def violations(edges: list[tuple[str, str]]) -> list[str]:
    names = [name for name, _ in LAYERS]
    found = []
    for name, target in edges:
        mine, theirs = layer_of(name), layer_of(target)
        if (name, target) in ALLOWED_UPWARD:
            continue
        if theirs > mine or (names[mine] == "training" and names[theirs] in TRAINING_NEVER_IMPORTS):
            found.append(f"{name} ({names[mine]}) imports {target} ({names[theirs]})")
    return found


def test_every_module_has_a_layer() -> None:
    assert [m for m in project_modules() if layer_of(m) < 0] == []


def test_folders_are_layers_and_the_root_holds_no_module() -> None:
    """Folders are layers (issue 39): `tomforge/` holds its `__init__` and the folders' links only (its former
    `errors.py`, `atomic_files.py` and `flag_fields.py` are the record contract's, in `schemas/`), and every
    module of `schemas/`, `audits/`, `hub/`, `rl/` and `flows/` has its folder's layer, so no module of a lower
    layer hides in a higher folder (the old `warehouse/export.py`, `rl/columns.py`). The root package is placed
    alone, so an unplaced module still has no layer."""
    modules = project_modules()
    assert {"tomforge", "tomforge.schemas.errors", "tomforge.schemas.atomic_files"} <= set(modules)
    assert {m for m in modules if m.count(".") == 1 and not (REPO / m.split(".")[1]).is_dir()} == set()
    assert layer_of("tomforge.a_new_module") == -1 and layer_of("tomforge") == 0
    names = [name for name, _ in LAYERS]
    folder_layer = {"schemas": 0, "audits": 3, "hub": 4, "rl": 5, "flows": 6}  # ARCHITECTURE.md's rows
    wrong = [m for m in modules if m.count(".") and folder_layer.get(m.split(".")[1], layer_of(m)) != layer_of(m)]
    assert wrong == [] and names[layer_of("tomforge.schemas.world.checker")] == "record contract"
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
        ("tomforge.hub.export", "tomforge.schemas.rl.columns"),
    ]  # release -> record contract
    assert [v.split(" ")[0] for v in violations(planted)] == [
        "tomforge.hub.export",
        "tomforge.rl.stage",
        "tomforge.generators.generate",
    ]


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
