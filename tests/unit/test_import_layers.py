"""The layers of bench_core, read from its imports (ast, nothing is imported): no module imports
itself round a circle, the domain imports nothing but the standard library, pydantic and itself,
and only adapters, the composition root and the entry points import I/O libraries.

Imports inside `if TYPE_CHECKING:` do not count (they never run); imports inside functions do
(they run when the function does, and a circle through one fails as surely).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import bench_core

ROOT = Path(bench_core.__file__).parent
PACKAGE = "bench_core"

IO_LIBRARIES = {"sqlite3", "boto3", "botocore", "httpx", "starlette", "fastapi"}
ADAPTERS = ("store.sqlite", "store.dynamodb", "live.local", "live.apigw", "llm.openai_compat",
            "llm.bedrock", "embed.bedrock", "workflows.stepfunctions",
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


def _import_nodes(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that can run: all but those under `if TYPE_CHECKING:`."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _type_checking_only(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def imports_of(name: str) -> set[str]:
    """The absolute names `name` imports: a module of bench_core where the name is one (`from
    .x import y` with `y` a module counts as importing `x.y`), else the import as written."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _import_nodes(ast.parse(path.read_text(), str(path))):
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
