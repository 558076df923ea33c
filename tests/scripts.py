"""The scripts of scripts/ as modules, for their tests (scripts/ is not a package)."""

import importlib.util
import pathlib
import sys
import types

SCRIPTS = pathlib.Path(__file__).resolve().parent.parent / "scripts"


def load_script(name: str) -> types.ModuleType:
    """``scripts/<name>.py`` as a module; scripts/ is on the path while it loads, as when the script
    runs (some import another script)."""
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None, f"no script {name}"
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(SCRIPTS))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(SCRIPTS))
    return module
