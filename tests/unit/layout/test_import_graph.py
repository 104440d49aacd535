"""The package's import graph, including imports inside functions, has no cycle.

The one exception allowed is the convenience classmethods ``Workload.from_file`` and
``Workload.from_text_file``, which reach the readers through their single entry point,
``tensorwire.workloads.formats``, when called (the readers import the model, not the reverse).
"""

from __future__ import annotations

import ast
from pathlib import Path

import tensorwire

ROOT = Path(tensorwire.__file__).parent
SHIMS = {("tensorwire.workload", "from_file"), ("tensorwire.workload", "from_text_file")}
SHIM_TARGET = "tensorwire.workloads.formats"


def _module_name(path: Path) -> str:
    parts = ("tensorwire",) + path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        in_shim = {id(i) for f in functions if (name, f.name) in SHIMS for i in ast.walk(f)}
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            for t in targets:
                if t not in modules or t == name:
                    continue
                if id(node) in in_shim and t == SHIM_TARGET:
                    continue
                graph[name].add(t)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                return stack[stack.index(n) :] + [n]
            if n not in state and (found := visit(n)):
                return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_no_import_cycle_in_the_package() -> None:
    graph = _graph()
    # a package imports its own submodules through ``from pkg import sub``; that is not a cycle
    for name in graph:
        graph[name] = {t for t in graph[name] if not t.startswith(name + ".")}
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_the_workload_model_imports_no_reader() -> None:
    assert not {t for t in _graph()["tensorwire.workload"] if t.startswith("tensorwire.workloads")}
