"""The import rules of docs/architecture.md, read from the code: every project module's imports (at the top, inside
functions and under TYPE_CHECKING alike) run from a higher layer to a lower one, no modules import each other in
a circle, the two benchmarks never import each other, the domain packages stay free of Dagster, and importing
EYT-Bench's assets loads none of SpeechEQ's modules."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("eyt_dagster", "assets", "resources")

# (layer, part) of each module, by the longest matching prefix: a module may import a lower layer, or its own part.
LAYERS: dict[str, tuple[float, str]] = {
    "eyt_dagster.ops": (1, "ops"),
    "eyt_dagster.explorer": (1, "explorer"),  # `eyt view`: only the CLI imports it
    "eyt_dagster.definitions": (2, "definitions"),
    "eyt_dagster.automation": (3, "wiring"),
    "eyt_dagster.settings_sources": (3, "wiring"),
    "eyt_dagster.partitions": (3, "wiring"),
    "eyt_dagster.jobs": (3, "wiring"),
    "eyt_dagster.staleness": (3, "wiring"),
    "assets": (4, "assets"),
    "eyt_dagster.table_registry": (4, "table_registry"),
    "resources": (5, "resources"),
    "eyt_dagster.reporting": (5, "reporting"),
    "eyt_dagster.slate_settings": (5, "slate_settings"),
    "eyt_dagster.slate": (6, "slate"),
    "eyt_dagster.eyt_voice": (6.5, "eyt_voice"),  # the spoken EYT-Bench, built on the two benchmarks below
    "eyt_dagster.eyt_bench": (7, "eyt_bench"),
    "eyt_dagster.speech_eq": (7, "speech_eq"),
    "eyt_dagster.fixtures": (6, "fixtures"),  # scripts that make the shipped fixtures with the benchmark code
    "eyt_dagster.core": (8, "core"),
    "eyt_dagster": (9, "package"),  # the package's __init__ (warning filters; imports nothing of the project)
}
# Imports across two parts of one layer that the rules allow: the CLI starts the explorer.
ACROSS: dict[str, set[str]] = {"eyt_dagster.ops.cli": {"explorer"}}
# Modules of the domain packages that may import a Dagster library: the table contracts' frame types.
DAGSTER_ALLOWED = {
    "eyt_dagster.eyt_bench.table_contracts",
    "eyt_dagster.speech_eq.table_contracts",
    "eyt_dagster.core.column_constraints",
}


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def imports_of(path: Path, known: dict[str, Path]) -> tuple[set[str], set[str]]:
    """The project modules a file imports (`from a.b import c` counts a.b.c when that is a module, else a.b), and
    the top-level names of everything it imports."""
    project, tops = set(), set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [
                f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in known else node.module for a in node.names
            ]
        else:
            continue
        for name in names:
            tops.add(name.split(".")[0])
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name:
                project.add(name)
    return project, tops


def layer(module: str) -> tuple[float, str]:
    prefix = max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len)
    return LAYERS[prefix]


def graph() -> dict[str, set[str]]:
    known = modules()
    return {m: imports_of(p, known)[0] - {m} for m, p in known.items()}


def upward(edges: dict[str, set[str]]) -> list[str]:
    """The imports that run to a layer above, or across to another part of the same layer."""
    wrong = []
    for module, targets in edges.items():
        (mine, part) = layer(module)
        for target in targets:
            (theirs, their_part) = layer(target)
            if their_part != part and theirs <= mine and their_part not in ACROSS.get(module, set()):
                wrong.append(f"{module} (layer {mine}, {part}) imports {target} (layer {theirs}, {their_part})")
    return sorted(wrong)


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other in a loop (Tarjan's strongly connected components)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, set()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in edges:
        if v not in index:
            visit(v)
    return found


@pytest.mark.unit
def test_every_import_runs_down_the_layers_or_stays_in_its_part():
    assert not upward(graph()), "\n".join(upward(graph()))


@pytest.mark.unit
def test_only_the_cli_imports_the_explorer():
    importers = sorted(
        m
        for m, targets in graph().items()
        if layer(m)[1] != "explorer" and any(layer(t)[1] == "explorer" for t in targets)
    )
    assert importers == ["eyt_dagster.ops.cli"], importers


@pytest.mark.unit
def test_no_modules_import_each_other_in_a_circle():
    assert not circles(graph())


@pytest.mark.unit
def test_the_rules_catch_a_circle_an_upward_import_and_a_benchmark_importing_the_other():
    made_up = {
        "eyt_dagster.core.stats": {"eyt_dagster.eyt_bench.metrics"},  # core knowing a benchmark
        "eyt_dagster.eyt_bench.metrics": {"eyt_dagster.core.stats"},
        "eyt_dagster.speech_eq.seq": {"eyt_dagster.eyt_bench.metrics"},  # one benchmark importing the other
        "resources.storage.warehouse": {"eyt_dagster.table_registry", "eyt_dagster.core.storage_types"},
    }
    assert upward(made_up) == [
        "eyt_dagster.core.stats (layer 8, core) imports eyt_dagster.eyt_bench.metrics (layer 7, eyt_bench)",
        "eyt_dagster.speech_eq.seq (layer 7, speech_eq) imports eyt_dagster.eyt_bench.metrics (layer 7, eyt_bench)",
        "resources.storage.warehouse (layer 5, resources) imports eyt_dagster.table_registry (layer 4, table_registry)",
    ]
    assert circles(made_up) == [["eyt_dagster.core.stats", "eyt_dagster.eyt_bench.metrics"]]


# The groups of resources/, from the top down: a group imports only groups below it (docs/architecture.md).
RESOURCE_GROUPS = {"roles": 5, "models": 4, "text": 3, "audio": 3, "datasets": 3, "runs": 2, "storage": 1}


def resource_group(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "resources" and len(parts) > 2 else None


def group_faces() -> dict[str, set[str]]:
    """Each resource group's face: the modules its `__init__.__all__` names."""
    faces = {}
    for group in RESOURCE_GROUPS:
        tree = ast.parse((ROOT / "resources" / group / "__init__.py").read_text())
        names = next(
            node.value
            for node in tree.body
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets)
        )
        faces[group] = {f"resources.{group}.{ast.literal_eval(e)}" for e in names.elts}  # type: ignore[attr-defined]
    return faces


def group_breaches(edges: dict[str, set[str]], faces: dict[str, set[str]]) -> list[str]:
    """Imports between resource groups that run upwards or sideways, and imports from outside a group of a module
    its face does not name."""
    wrong = []
    for module, targets in edges.items():
        mine = resource_group(module)
        for target in targets:
            theirs = resource_group(target)
            if theirs is None or theirs == mine:
                continue
            if target not in faces[theirs]:
                wrong.append(f"{module} imports {target}, which resources/{theirs}/__init__.py does not offer")
            if mine is not None and RESOURCE_GROUPS[theirs] >= RESOURCE_GROUPS[mine]:
                wrong.append(f"{module} ({mine}) imports {target} ({theirs}), a group not below it")
    return sorted(wrong)


@pytest.mark.unit
def test_every_resource_lives_in_a_group_and_every_group_offers_real_modules():
    loose = [
        m
        for m in modules()
        if m.startswith("resources.") and resource_group(m) is None and m[10:] not in RESOURCE_GROUPS
    ]
    assert not loose, f"modules outside a group of resources/: {loose}"
    known = modules()
    for group, face in group_faces().items():
        assert face <= set(known), (
            f"resources/{group}/__init__.py offers modules that do not exist: {face - set(known)}"
        )


@pytest.mark.unit
def test_resource_groups_import_downwards_and_through_their_faces():
    assert not group_breaches(graph(), group_faces()), "\n".join(group_breaches(graph(), group_faces()))


@pytest.mark.unit
def test_the_group_rules_catch_an_upward_group_and_a_private_module():
    faces = {"storage": {"resources.storage.warehouse"}, "models": {"resources.models.chat_client"}}
    made_up = {
        "resources.storage.warehouse": {"resources.models.chat_client"},  # storage reaching up to model calls
        "assets.x": {"resources.storage.sqlite_private"},  # past the group's face
        "resources.models.chat_client": {"resources.storage.warehouse", "resources.models.call_cache"},  # fine
    }
    assert group_breaches(made_up, faces) == [
        "assets.x imports resources.storage.sqlite_private, which resources/storage/__init__.py does not offer",
        "resources.storage.warehouse (storage) imports resources.models.chat_client (models), a group not below it",
    ]


@pytest.mark.unit
def test_the_domain_packages_import_no_dagster():
    known = modules()
    found = []
    for module, path in known.items():
        if layer(module)[1] in ("core", "eyt_bench", "speech_eq", "eyt_voice") and module not in DAGSTER_ALLOWED:
            tops = imports_of(path, known)[1]
            found += [f"{module} imports {top}" for top in tops & {"dagster", "dagster_pandas"}]
    assert not found, found


@pytest.mark.cli
def test_loading_eyt_bench_assets_imports_no_speech_eq_module():
    code = (
        "import importlib, pkgutil, sys, assets.eyt_bench as p\n"
        "for m in pkgutil.iter_modules(p.__path__): importlib.import_module(f'assets.eyt_bench.{m.name}')\n"
        "print(sorted(m for m in sys.modules if m.startswith('eyt_dagster.speech_eq')))\n"
        "print(len([m for m in sys.modules if m.split('.')[0] in ('eyt_dagster', 'assets', 'resources')]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    speech, count = out.stdout.splitlines()
    assert speech == "[]", speech
    assert int(count) < len(modules()) / 2  # the EYT-Bench side of the house, not the whole of it
