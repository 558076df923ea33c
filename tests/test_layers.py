"""The import contract: the package's layers only point down, with no circles.

Read from the source (the AST), not by importing: every ``import`` of a
``stapel_rl`` module is an edge (at the top of a module, under
``TYPE_CHECKING``, inside a function, or an ``importlib.import_module`` of a
literal name), and an edge from a lower layer to a higher one, or between two
packages of one layer, fails with the file and line. A module listed above its
package (``stapel_rl.env.gym_env`` above ``stapel_rl.env``) is placed there
only to order the package's own modules: outside its package it imports
nothing above the package's layer (such a listing of ``stapel_rl.env.wrappers``
above ``stapel_rl.eval`` once hid the env layer's import of agents).
Imports inside functions are allowed only for optional extras and
platform-specific modules (``OPTIONAL``) and the deprecated paths
(``DEPRECATED_PATHS``): the rest of the package names its dependencies at the
top of each module.
"""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "stapel_rl"

#: Lowest first. A module belongs to the first entry naming it or a package above it; the names in
#: one tuple are independent of each other (neither imports the other).
LAYERS: "list[tuple[str, ...]]" = [
    ("stapel_rl.env",),  # the rules: numpy only
    ("stapel_rl.bundled", "stapel_rl._malloc", "stapel_rl.cluster"),  # shipped files, allocator, Ray set-up
    ("stapel_rl",),  # the package root: the version and pretrained()
    ("stapel_rl.records",),  # the code version, files that survive a kill (torch-free)
    # The adapters around the rules for other libraries' interfaces.
    ("stapel_rl.env.gym_env", "stapel_rl.openspiel"),
    ("stapel_rl.env.vector_env", "stapel_rl.env.pettingzoo_env"),  # they share the Gym env's spaces
    ("stapel_rl.models", "stapel_rl.classical"),  # networks and checkpoints; the compiled searcher
    ("stapel_rl.mcts",),
    ("stapel_rl.eval",),  # agents (the classical one too), arena, openings, tournaments, ratings, SPRT, Game
    ("stapel_rl.train",),  # self-play training
    ("stapel_rl.web",),
    ("stapel_rl.cli",),  # every entry point
    ("stapel_rl.perft", "stapel_rl.train.__main__"),  # older paths of two entry points, kept for one version
]
#: Modules that may be imported inside a function: optional extras, or not on every platform.
#: ``stapel_rl.web`` is the package that needs the extra "web" (``stapel-serve`` says so when it is missing).
OPTIONAL = {
    "ray",
    "fastapi",
    "uvicorn",
    "readline",
    "pettingzoo",
    "pyspiel",
    "open_spiel",
    "stable_baselines3",
    "sb3_contrib",
    "torchrl",
    "playwright",
    "onnx",
    "onnxruntime",
    "stapel_rl.web",
}


#: Imports inside a function that point up, each a deprecated old path kept for one version: importer -> imported.
DEPRECATED_PATHS = {"stapel_rl.env.wrappers": "stapel_rl.eval.versus"}


def optional(module: str) -> bool:
    return any(module == name or module.startswith(name + ".") for name in OPTIONAL)


def module_name(path: pathlib.Path, root: pathlib.Path = PACKAGE.parent) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> "tuple[int, str]":
    """``(layer index, entry)`` of a ``stapel_rl`` module: the longest entry naming it or a package above it."""
    best = None
    for index, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and (best is None or len(name) > len(best[1])):
                best = (index, name)
    assert best is not None, f"{module} is in no layer of tests/test_layers.py"
    return best


def dynamic_import(call: ast.Call) -> "str | None":
    """The module ``call`` imports if it is ``importlib.import_module("name")`` or ``__import__("name")`` of a
    literal absolute name, else None."""
    func = call.func
    called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    first = call.args[0] if call.args else None
    if called in ("import_module", "__import__") and isinstance(first, ast.Constant) and isinstance(first.value, str):
        return None if first.value.startswith(".") else first.value
    return None


def home(module: str) -> "tuple[int, str]":
    """The layer of the package a module belongs to (``stapel_rl.env`` for ``stapel_rl.env.gym_env``)."""
    return layer_of(".".join(module.split(".")[:2]))


def imports(path: pathlib.Path, root: pathlib.Path = PACKAGE.parent) -> "list[tuple[str, int, bool]]":
    """``(imported module, line, inside a function)`` for each import in ``path`` (a file under ``root``)."""
    tree = ast.parse(path.read_text(), str(path))
    inside = {
        id(node)
        for func in ast.walk(tree)
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef))
        for node in ast.walk(func)
    }
    here = module_name(path, root).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (dynamic := dynamic_import(node)) is not None:
            names = [dynamic]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
            module = ".".join(p for p in (base, node.module or "") if p)
            # ``from pkg import sub`` imports the submodule sub when there is one
            subs = [
                f"{module}.{a.name}"
                for a in node.names
                if (root / f"{module}.{a.name}".replace(".", "/")).with_suffix(".py").exists()
                or (root / f"{module}.{a.name}".replace(".", "/") / "__init__.py").exists()
            ]
            names = subs or [module]
        else:
            continue
        found += [(name, node.lineno, id(node) in inside) for name in names]
    return found


def edges(root: pathlib.Path) -> "list[tuple[str, str, str]]":
    """``(importer, imported, where)`` for every import of a ``stapel_rl`` module under ``root`` (see the top)."""
    out = []
    for path in sorted((root / "stapel_rl").rglob("*.py")):
        importer = module_name(path, root)
        for name, line, in_function in imports(path, root):
            # Every import counts, inside functions too (a lazy import is still a dependency), but for
            # optional extras and the documented deprecated paths.
            allowed = in_function and (optional(name) or DEPRECATED_PATHS.get(importer) == name)
            if name.split(".")[0] == "stapel_rl" and not allowed:
                out.append((importer, name, f"{path.relative_to(root)}:{line}"))
    return out


def against_the_layers(root: pathlib.Path) -> "list[str]":
    wrong = []
    for importer, imported, where in edges(root):
        (low, low_name), (high, high_name) = layer_of(imported), layer_of(importer)
        if low > high or (low == high and low_name != high_name):
            wrong.append(f"{where}: {importer} ({high_name}) imports {imported} ({low_name})")
            continue
        # A package's __main__ is a program (python -m), which the package never imports.
        (top, package) = home(importer)
        outside = not (imported == package or imported.startswith(package + "."))
        if outside and importer.split(".")[-1] != "__main__" and (low > top or (low == top and low_name != package)):
            wrong.append(
                f"{where}: {importer} ({high_name}, a module of {package}) imports {imported} ({low_name}), "
                f"above its package's layer"
            )
    return wrong


def cycles(root: pathlib.Path) -> "list[list[str]]":
    """The import graph's strongly connected components of more than one module (Tarjan)."""
    graph: "dict[str, set[str]]" = {}
    for importer, imported, _ in edges(root):
        graph.setdefault(importer, set()).add(imported)
    index: "dict[str, int]" = {}
    low: "dict[str, int]" = {}
    stack: "list[str]" = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def inline_imports(root: pathlib.Path) -> "list[str]":
    return [
        f"{path.relative_to(root)}:{line}: {name}"
        for path in sorted((root / "stapel_rl").rglob("*.py"))
        for name, line, in_function in imports(path, root)
        if in_function and not optional(name) and DEPRECATED_PATHS.get(module_name(path, root)) != name
    ]


def test_every_module_is_in_a_layer():
    for path in PACKAGE.rglob("*.py"):
        layer_of(module_name(path))


def test_imports_point_down_the_layers():
    wrong = against_the_layers(PACKAGE.parent)
    assert not wrong, "imports against the layers:\n" + "\n".join(wrong)


def test_no_import_cycles():
    assert not cycles(PACKAGE.parent)


def test_imports_inside_functions_are_only_optional_extras():
    wrong = inline_imports(PACKAGE.parent)
    assert not wrong, "imports inside functions (move them to the top of the module):\n" + "\n".join(wrong)


@pytest.mark.parametrize("module", ["stapel_rl.env", "stapel_rl.env.engine", "stapel_rl.env.notation"])
def test_the_engine_imports_neither_gymnasium_nor_torch(module):
    code = f"import sys, {module}; print(sorted({{'gymnasium', 'torch', 'numba'}} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_old_path_of_versus_agent_loads_no_agents_until_asked():
    """``stapel_rl.env.wrappers`` (``DEPRECATED_PATHS``) loads ``stapel_rl.eval`` only once ``VersusAgent`` is read."""
    code = (
        "import sys, warnings, stapel_rl.env.wrappers\n"
        "print(sorted(m for m in sys.modules if m.startswith('stapel_rl.eval')))\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    from stapel_rl.env.wrappers import VersusAgent\n"
        "print(VersusAgent.__module__, [w.category.__name__ for w in caught])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["[]", "stapel_rl.eval.versus ['DeprecationWarning']"]


def test_stapel_match_loads_no_torch_before_its_jobs_start():
    """A spawned job of ``stapel-match --jobs N`` re-imports the main module before its set-up runs:
    torch loaded there starts with the machine's threads (the thread bug fixed in 333b419)."""
    code = "import sys, stapel_rl.cli.match; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_contract_sees_wrong_imports(tmp_path):
    """The checker itself, on a made-up package: upward imports (at the top, inside a function, by
    ``importlib``, from a module listed above its package), a cycle, an import inside a function."""
    for name, text in {
        "stapel_rl/__init__.py": "",
        "stapel_rl/env/__init__.py": "",
        "stapel_rl/env/engine.py": "from stapel_rl.train import trainer\n\n\ndef f():\n    import torch\n",
        "stapel_rl/env/lazy.py": "def f():\n    from stapel_rl.eval import agents\n",
        "stapel_rl/env/dynamic.py": "import importlib\n\nX = importlib.import_module('stapel_rl.eval.agents')\n",
        # listed above its package (to follow gym_env), and above records: still the env package's module
        "stapel_rl/env/pettingzoo_env.py": "from stapel_rl import records\n",
        "stapel_rl/records.py": "",
        "stapel_rl/eval/__init__.py": "",
        "stapel_rl/eval/agents.py": "",
        "stapel_rl/train/__init__.py": "",
        "stapel_rl/train/trainer.py": "import stapel_rl.train.app\n",
        "stapel_rl/train/app.py": "from stapel_rl.train import trainer\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert against_the_layers(tmp_path) == [
        "stapel_rl/env/dynamic.py:3: stapel_rl.env.dynamic (stapel_rl.env) imports "
        "stapel_rl.eval.agents (stapel_rl.eval)",
        "stapel_rl/env/engine.py:1: stapel_rl.env.engine (stapel_rl.env) imports "
        "stapel_rl.train.trainer (stapel_rl.train)",
        # an upward import inside a function (as env/wrappers.py's of VersusAgent was at module level)
        "stapel_rl/env/lazy.py:2: stapel_rl.env.lazy (stapel_rl.env) imports stapel_rl.eval.agents (stapel_rl.eval)",
        "stapel_rl/env/pettingzoo_env.py:1: stapel_rl.env.pettingzoo_env (stapel_rl.env.pettingzoo_env, a module of "
        "stapel_rl.env) imports stapel_rl.records (stapel_rl.records), above its package's layer",
    ]
    assert cycles(tmp_path) == [["stapel_rl.train.app", "stapel_rl.train.trainer"]]
    assert inline_imports(tmp_path) == [
        "stapel_rl/env/engine.py:5: torch",
        "stapel_rl/env/lazy.py:2: stapel_rl.eval.agents",
    ]
