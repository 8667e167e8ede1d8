"""The layers of bench_core, read from its imports (ast, nothing is imported): no module imports
itself round a circle, the domain imports nothing but the standard library, pydantic and itself,
only adapters, the composition root and the entry points import I/O libraries, and the packages
stand on the floors ARCHITECTURE.md draws, each importing only the floors below it that it may.

For the circle of modules, imports inside `if TYPE_CHECKING:` do not count (they never run);
imports inside functions do (they run when the function does, and a circle through one fails as
surely). For the floors every import counts: a type named from a floor above is a dependency on
it all the same.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import bench_core

ROOT = Path(bench_core.__file__).parent
PACKAGE = "bench_core"

IO_LIBRARIES = {"sqlite3", "boto3", "botocore", "httpx", "starlette", "fastapi"}
ADAPTERS = ("store.sqlite", "store.dynamodb", "live.local", "live.apigw", "live.lambda_push",
            "llm.openai_compat",
            "llm.bedrock", "embed.bedrock", "workflows.stepfunctions", "workflows.eval_queue",
            "files.s3", "files.lambda_export",
            # adapters to outside services that have no second implementation, so no port:
            "accounts.github",  # GitHub's OAuth endpoints
            "reuse.outbound")  # a published agent's own endpoint
IO_ALLOWED = {
    **{adapter: IO_LIBRARIES for adapter in ADAPTERS},
    "runtime": IO_LIBRARIES,
    "http": {"fastapi", "starlette"},  # the entry layer: routers, the app factory
    "mcp": {"fastapi", "starlette"},
    "local": {"fastapi", "starlette"},
}
DOMAIN_MAY_IMPORT = {"pydantic", "pydantic_core"}


def module_name(path: Path) -> str:
    parts = [PACKAGE, *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(tree: ast.AST, *, typing_too: bool = False) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that can run: all but those under `if TYPE_CHECKING:`, unless
    `typing_too`."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _type_checking_only(node) and not typing_too:
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def imports_of(name: str, *, typing_too: bool = False) -> set[str]:
    """The absolute names `name` imports: a module of bench_core where the name is one (`from
    .x import y` with `y` a module counts as importing `x.y`), else the import as written."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _import_nodes(ast.parse(path.read_text(), str(path)), typing_too=typing_too):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join([*anchor, base] if base else anchor)
        for alias in node.names:
            target = f"{base}.{alias.name}"
            found.add(target if target in MODULES else base)
    return found


GRAPH = {name: {i for i in imports_of(name) if i in MODULES and i != name} for name in MODULES}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph)))

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph[node]):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _inside(name: str, prefix: str) -> bool:
    full = f"{PACKAGE}.{prefix}"
    return name == full or name.startswith(full + ".")


def test_the_graph_sees_relative_lazy_and_type_checking_imports() -> None:
    assert len(MODULES) > 100
    assert "bench_core.ingest.pipeline" in GRAPH["bench_core.http.ingest"]  # from ..ingest.pipeline
    assert "bench_core.accounts.signed_tokens" in GRAPH["bench_core.accounts.csrf"]  # from . import …
    assert "bench_core.store.sqlite.store" in GRAPH["bench_core.runtime.adapters"]  # in a function
    assert "bench_core.ports.live" not in GRAPH["bench_core.accounts.live_grants"]  # TYPE_CHECKING only
    assert "settings.py" in PACKAGE_GRAPH["ports/"]  # ports/services.py, under TYPE_CHECKING only
    assert "store/" in PACKAGE_GRAPH["runtime/"]  # runtime/adapters.py, inside a function


def test_no_module_imports_itself_round_a_circle() -> None:
    assert cycles(GRAPH) == []


def test_the_cycle_finder_finds_a_circle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_domain_imports_only_the_standard_library_pydantic_and_itself() -> None:
    wrong = {name: sorted(i for i in imports_of(name)
                          if not _inside(i, "domain") and i.split(".")[0] not in
                          sys.stdlib_module_names | DOMAIN_MAY_IMPORT)
             for name in MODULES if _inside(name, "domain")}
    assert {name: found for name, found in wrong.items() if found} == {}


def test_only_adapters_runtime_and_entry_points_import_io_libraries() -> None:
    wrong = {}
    for name in MODULES:
        allowed = next((libs for prefix, libs in IO_ALLOWED.items() if _inside(name, prefix)), set())
        used = {i.split(".")[0] for i in imports_of(name)} & IO_LIBRARIES
        if used - allowed:
            wrong[name] = sorted(used - allowed)
    assert wrong == {}


def test_routers_never_import_the_store() -> None:
    wrong = {name: sorted(i for i in imports_of(name) if _inside(i, "store"))
             for name in MODULES if _inside(name, "http")}
    assert {name: found for name, found in wrong.items() if found} == {}


# ---- the package graph -----------------------------------------------------------------------

FLOORS: dict[int, tuple[set[str], set[int]]] = {
    # floor: (its packages and top-level modules, the floors they may import)
    13: ({"cli.py"}, set(range(1, 13))),
    12: ({"local.py"}, set(range(1, 12))),
    11: ({"http/"}, set(range(1, 11))),
    10: ({"lambdas/", "mcp/"}, set(range(1, 10))),
    9: ({"runtime/"}, set(range(1, 9))),
    8: ({"reads/", "alerts/"}, {1, 2, 3, 4, 6, 7}),
    7: ({"benchmarks/", "clustering/", "reuse/", "trial/"}, {1, 2, 3, 4, 6}),
    6: ({"accounts/", "evals/", "ingest/"}, {1, 2, 3, 4}),
    5: ({"store/", "live/", "llm/", "embed/", "workflows/", "files/"}, {1, 2, 3}),
    4: ({"render/"}, {1}),
    3: ({"ports/"}, {1, 2}),
    2: ({"settings.py"}, {1}),
    1: ({"domain/", "clock.py", "log.py", "data_dir.py", "data_files.py", "__init__.py"}, set()),
}
"""The floors of bench_core as ARCHITECTURE.md draws them (its block under "The package graph"):
entry points on top, then the composition root, the use cases, the adapters beside them (no
arrow either way), the ports, and the ground everything may import."""


def package_of(module: str) -> str:
    """The package or top-level module of bench_core that `module` belongs to, as a path:
    `domain/`, `settings.py`, or `__init__.py` for bench_core's own."""
    parts = module.split(".")[1:]
    if not parts:
        return "__init__.py"
    return f"{parts[0]}/" if (ROOT / parts[0]).is_dir() else f"{parts[0]}.py"


def package_graph() -> dict[str, set[str]]:
    """Package -> the other packages it imports, every import counted (TYPE_CHECKING ones and
    those inside functions too)."""
    graph: dict[str, set[str]] = {}
    for name in MODULES:
        found = {package_of(i) for i in imports_of(name, typing_too=True) if i in MODULES}
        graph.setdefault(package_of(name), set()).update(found - {package_of(name)})
    return graph


PACKAGE_GRAPH = package_graph()
FLOOR_OF = {package: floor for floor, (packages, _) in FLOORS.items() for package in packages}


def test_every_package_stands_on_one_floor() -> None:
    placed = [package for packages, _ in FLOORS.values() for package in packages]
    assert len(placed) == len(set(placed)), "a package is on one floor"
    assert set(PACKAGE_GRAPH) == set(placed), "a new package needs its floor here and in ARCHITECTURE.md"


def test_a_floor_may_import_only_floors_below_it() -> None:
    assert {floor: sorted(below for below in may if below >= floor)
            for floor, (_, may) in FLOORS.items() if any(below >= floor for below in may)} == {}


def test_each_package_imports_only_the_floors_it_may() -> None:
    wrong = {f"{package} (floor {FLOOR_OF[package]})": sorted(
        f"{other} (floor {FLOOR_OF[other]})" for other in imported
        if FLOOR_OF[other] not in FLOORS[FLOOR_OF[package]][1])
        for package, imported in PACKAGE_GRAPH.items()}
    assert {package: found for package, found in wrong.items() if found} == {}


def test_no_package_imports_itself_round_a_circle() -> None:
    assert cycles(PACKAGE_GRAPH) == []


def test_architecture_md_draws_these_floors() -> None:
    """Its block under "The package graph": a floor a line, top down, with its packages and the
    floors they may import (`1-12`, `1 2 3`, `-` for none)."""
    text = (ROOT.parents[2] / "ARCHITECTURE.md").read_text()
    block = re.search(r"^## The package graph\n.*?^```\n(.*?)^```", text, re.S | re.M)
    assert block, "ARCHITECTURE.md has a section '## The package graph' with a code block"
    drawn: dict[int, tuple[set[str], set[int]]] = {}
    for line in block.group(1).splitlines():
        words = line.split()
        if not words or not words[0].isdigit():
            continue
        packages = {w for w in words[1:] if w.endswith(("/", ".py"))}
        may: set[int] = set()
        for word in words[1 + len(packages):]:
            if not re.fullmatch(r"\d+(-\d+)?", word):
                break
            low, _, high = word.partition("-")
            may.update(range(int(low), int(high or low) + 1))
        drawn[int(words[0])] = (packages, may)
    assert drawn == FLOORS
