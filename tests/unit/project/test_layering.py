"""The packages keep to their layers: the finance domain (`finsec`) loads no Ray, FastAPI or Starlette; the client
(`finsec_client`, the `finsec` command included) loads no server module until a command starts a server; the Serve
app's top level stays small. Each import check runs in a fresh interpreter, where nothing is loaded yet."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

_LOADED_BY_IMPORTING_EVERY_MODULE = """
import importlib, json, pkgutil, sys
package = importlib.import_module(sys.argv[1])
for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
    if not info.name.endswith("__main__"):
        try:
            importlib.import_module(info.name)
        except ModuleNotFoundError as missing:  # an integration whose extra is not installed
            if missing.name.split(".")[0] not in {OPTIONAL}:
                raise
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules})))
"""
OPTIONAL = {"openenv", "mcp", "verifiers", "nemo_gym"}  # the integrations' extras


def loaded_by_importing(package: str) -> set[str]:
    """The top-level modules loaded by importing every module of `package`."""
    script = _LOADED_BY_IMPORTING_EVERY_MODULE.replace("{OPTIONAL}", repr(OPTIONAL))
    out = subprocess.run(
        [sys.executable, "-c", script, package], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
    ).stdout
    return set(json.loads(out))


def test_the_domain_loads_no_ray_fastapi_or_starlette():
    assert loaded_by_importing("finsec") & {"ray", "fastapi", "starlette", "deployments", "finsec_client"} == set()


def test_the_client_loads_no_server_module():
    assert loaded_by_importing("finsec_client") & {"deployments", "session_store", "ray"} == set()


def test_the_client_imports_no_server_module_anywhere():
    """Not even in a function: the client speaks to a server over HTTP; the `finsec` command that also serves is
    the server's (deployments/cli), which composes the client's commands with its own."""
    graph = _import_graph()
    reaching = {
        module: sorted(t for t in targets if t.startswith(("deployments", "session_store")))
        for module, targets in graph.items()
        if module.startswith("finsec_client")
    }
    assert {module: targets for module, targets in reaching.items() if targets} == {}


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["rollouts", "--help"],
        ["serve", "--no-such-flag"],
        ["check", "--help"],
        ["recipe", "nemo-gym", "--help"],
        ["tasks", "nemo-gym", "--help"],
        ["tasks", "build", "--help"],
    ],
)
def test_the_command_line_loads_no_ray_to_answer(argv):
    probe = (
        "import runpy, sys; sys.argv = ['finsec', *sys.argv[1:]]\n"
        "try:\n    runpy.run_module('deployments.cli', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "app = sorted(m for m in sys.modules if m.startswith(('deployments.', 'session_store'))\n"
        "             and not m.startswith('deployments.cli'))\n"
        "print('\\nLOADED', 'ray' in sys.modules, bool(app))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120
    ).stdout
    assert out.rstrip().endswith("LOADED False False"), out[-400:]


def test_the_serve_apps_top_level_holds_at_most_twelve_modules():
    modules = [p.name for p in (ROOT / "deployments").glob("*.py") if p.name != "__init__.py"]
    assert len(modules) <= 12, sorted(modules)


def _modules(package: str):
    import importlib
    import pkgutil

    root = importlib.import_module(package)
    yield root
    for info in pkgutil.walk_packages(root.__path__, package + "."):
        if not info.name.endswith("__main__"):
            try:
                yield importlib.import_module(info.name)
            except ModuleNotFoundError as missing:
                if missing.name.split(".")[0] not in OPTIONAL:
                    raise


@pytest.mark.parametrize("package", ["deployments", "finsec", "finsec_client", "session_store"])
def test_every_all_names_what_its_module_defines(package):
    """A module's `__all__` is its public API: each name in it exists, once."""
    for module in _modules(package):
        public = getattr(module, "__all__", None)
        if public is not None:
            assert len(public) == len(set(public)), module.__name__
            assert [name for name in public if not hasattr(module, name)] == [], module.__name__


PACKAGES = ("deployments", "finsec", "finsec_client", "session_store")


def _import_graph() -> dict[str, set[str]]:
    """Each module of the packages -> the modules of the packages it imports, anywhere in its body (a function's
    import included), read from its source."""
    import ast

    modules = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the module's package, one level up per dot past the first
                    anchor = here.split(".")[: len(here.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            else:
                continue
            graph[name] |= {target for target in targets if target in modules and target != name}
    return graph


def test_no_module_imports_itself_through_others():
    """Zero import cycles among the packages' modules (a function-level import counts: it hides a cycle, it does
    not remove it)."""
    graph = _import_graph()
    cycles, index, low, stack, on_stack = [], {}, {}, [], set()

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in graph:
        if node not in index:
            visit(node)
    assert cycles == []


def test_product_code_cites_no_benchmark_run():
    """Comments and messages name a decision and at most a stable doc (docs/benchmarks.md links each figure to its
    report); a report in bench/results is a run, replaced by the next one."""
    cited = []
    for folder in (*PACKAGES, "cluster", "configs"):
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and path.suffix in {".py", ".yaml", ".yml", ".json"} and "schema" not in path.parts:
                cited += [
                    f"{path.relative_to(ROOT)}:{n}"
                    for n, line in enumerate(path.read_text().splitlines(), 1)
                    if "bench/results" in line or re.search(r"\b[a-z_]+\.reading\.md\b", line)
                ]
    assert cited == []


def _defined_public(tree) -> list[str]:
    import ast

    names = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:  # a name, or names unpacked from a tuple
                names += [
                    t.id
                    for t in (target.elts if isinstance(target, ast.Tuple) else [target])
                    if isinstance(t, ast.Name)
                ]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return [name for name in names if not name.startswith("_") and name not in {"log", "logger"}]


@pytest.mark.parametrize("package", PACKAGES)
def test_every_module_says_what_is_public(package):
    """A module that defines public names lists them in `__all__`; what it leaves out is private (`_name`), so
    a new public function is either exported or named as a helper."""
    import ast

    unlisted = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        tree = ast.parse(path.read_text())
        listed = next(
            (
                ast.literal_eval(node.value)
                for node in tree.body
                if isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
            ),
            None,
        )
        defined = _defined_public(tree)
        if defined and (listed is None or set(defined) - set(listed)):
            unlisted[str(path.relative_to(ROOT))] = sorted(set(defined) - set(listed or []))
    assert unlisted == {}
