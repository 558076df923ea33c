"""The notebooks in notebooks/: committed without outputs, and each runs top to bottom without an error."""

import pathlib

import pytest

nbformat = pytest.importorskip("nbformat")

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
EXPECTED = ["01_rules_and_engine.ipynb", "02_training_run.ipynb", "03_tournament.ipynb"]


def test_the_notebooks_are_there():
    assert [p.name for p in NOTEBOOKS] == EXPECTED


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    dirty = [
        i
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and (cell.outputs != [] or cell.execution_count is not None)
    ]
    assert not dirty, (
        f"{path.name}: code cells {dirty} have outputs or execution counts; clear them before "
        "committing (e.g. jupyter nbconvert --clear-output --inplace)"
    )


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_runs_top_to_bottom(path, tmp_path):
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    from jupyter_client.kernelspec import find_kernel_specs

    assert "python3" in find_kernel_specs(), "no python3 kernel: pip install ipykernel"
    nb = nbformat.read(path, as_version=4)
    # The kernel starts in the repository root, so relative paths (runs/, checkpoints/,
    # tests/data/) resolve as they do for a user; the notebooks write only to temporary folders.
    client = nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    )
    try:
        client.execute()
    finally:
        nbformat.write(nb, tmp_path / path.name)  # the executed copy, for a look after a failure
    errors = [
        (i, out.get("ename"), out.get("evalue"))
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code"
        for out in cell.outputs
        if out.output_type == "error"
    ]
    assert not errors, f"{path.name}: {errors}"
