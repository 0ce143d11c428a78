"""The house rules of docs/architecture.md that a reader cannot see at a glance, checked:
no import cycle between the package's modules, DuckDB only under ``paperwatch/db/``,
no module over 800 lines and no function over 80."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "paperwatch"


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules ``path`` imports when it is imported (module level; imports
    inside functions and ``if TYPE_CHECKING:`` blocks run later or never)."""
    found = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("paperwatch"):
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                found.add(full if full in modules else str(node.module))
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("paperwatch"))
    return found & set(modules)


def test_no_import_cycle() -> None:
    modules = _modules()
    graph = {name: _imports(path, modules) for name, path in modules.items()}
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(name: str, stack: list[str]) -> None:
        state[name] = 1
        stack.append(name)
        for other in sorted(graph[name]):
            if state.get(other) == 1:
                cycles.append([*stack[stack.index(other) :], other])
            elif other not in state:
                visit(other, stack)
        stack.pop()
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [])
    assert cycles == []


def test_only_the_database_package_imports_duckdb() -> None:
    importers = sorted(
        str(path.relative_to(ROOT))
        for path in PACKAGE.rglob("*.py")
        if any(
            (isinstance(n, ast.Import) and any(a.name == "duckdb" for a in n.names))
            or (isinstance(n, ast.ImportFrom) and n.module == "duckdb")
            for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        )
    )
    assert [p for p in importers if not p.startswith("paperwatch/db/")] == []


def test_modules_and_functions_stay_short() -> None:
    long_modules, long_functions = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        rel = str(path.relative_to(ROOT))
        if text.count("\n") > 800:
            long_modules.append(rel)
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                if node.end_lineno - node.lineno + 1 > 80:
                    long_functions.append(f"{rel}:{node.name}")
    assert (long_modules, long_functions) == ([], [])
