"""Imports follow ARCHITECTURE.md's layers: a module imports its own layer or a lower one, never a higher one.

The cycle test (`test_import_cycles.py`) allows A -> B as long as B never leads back to A; this test also
fixes the direction. The layer of each module is written out below, in the order of ARCHITECTURE.md's
"Layers" table (the longest matching prefix wins), and every project module must have one, so a new
module is placed deliberately. Imports inside functions count, as in the cycle test.
"""

from __future__ import annotations

from tests.test_import_cycles import REPO, imported_modules, project_modules

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (  # lowest first
    (
        "record contract",
        (
            "tomforge",  # the package itself (its version), this module only: see EXACT
            "tomforge.errors",
            "tomforge.atomic_files",  # files written beside their target and renamed over it
            "tomforge.flag_fields",  # a settings field's flag: plain data the settings classes declare
            "tomforge.schemas",
            "tomforge.warehouse.record",
            "tomforge.warehouse.columns",
            "tomforge.warehouse.ddl",
            "tomforge.warehouse.vocabulary",
            "tomforge.warehouse.progress",
            "tomforge.warehouse.versions",
            "tomforge.rl.columns",
            "tomforge.rl.prompts",
            "tomforge.rl.licenses",
            "tomforge.hub.errors",  # what a release's licenses allow: the exporter and the trainer ask it
            # the world model a record's trace is written in: the RL stage rebuilds it from a release
            "tomforge.generators.checker",
            "tomforge.generators.world_question",
        ),
    ),
    ("reading sources", ("tomforge.warehouse.sources", "tomforge.warehouse.batch", "tomforge.generators")),
    ("storage", ("tomforge.warehouse", "tomforge.generators.real.store")),
    ("analysis", ("tomforge.audits",)),
    ("release", ("tomforge.warehouse.export", "tomforge.hub")),
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


def test_the_package_root_modules_are_covered() -> None:
    """`tomforge/`'s own files are modules of the package like the folders' (issue 39): listed, placed, and
    their imports judged; the root package is placed alone, so an unplaced module still has no layer."""
    modules = project_modules()
    assert {"tomforge", "tomforge.errors", "tomforge.atomic_files"} <= set(modules)
    assert {m for m in modules if m.count(".") == 1 and not (REPO / m.split(".")[1]).is_dir()} == {
        "tomforge.errors",
        "tomforge.atomic_files",
        "tomforge.flag_fields",
    }
    assert layer_of("tomforge.a_new_module") == -1 and layer_of("tomforge") == 0
    edges = project_edges()
    assert ("tomforge.warehouse.db", "tomforge.errors") in edges  # `from tomforge.errors import ...` is an edge
    planted = [("tomforge.errors", "tomforge.warehouse.db"), ("tomforge.atomic_files", "tomforge.hub.release")]
    assert [v.split(" ")[0] for v in violations(planted)] == ["tomforge.errors", "tomforge.atomic_files"]


def test_no_import_against_the_layers() -> None:
    assert violations(project_edges()) == []


def test_planted_imports_are_judged_by_the_table() -> None:
    planted = [
        ("tomforge.warehouse.export", "tomforge.rl.trl_backend"),  # release -> training: up
        ("tomforge.rl.stage", "tomforge.warehouse.load"),  # training -> storage: never
        ("tomforge.generators.generate", "tomforge.audits.run"),  # sources -> analysis: up
        ("tomforge.rl.evaluate", "tomforge.warehouse.db"),  # the eval_results exception
        ("tomforge.hub.publish", "tomforge.warehouse.export"),  # same layer
        ("tomforge.flows.cli", "tomforge.rl.stage"),  # down
        ("tomforge.warehouse.export", "tomforge.rl.columns"),
    ]  # release -> record contract
    assert [v.split(" ")[0] for v in violations(planted)] == [
        "tomforge.warehouse.export",
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
