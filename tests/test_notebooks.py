"""The notebooks run from start to end (outputs are not committed; they are checked here)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
TIMEOUT_S = 300
"""Per cell: a world solve takes about 10 s; a slow CI machine gets ample room."""


def test_there_are_notebooks() -> None:
    assert [p.name for p in NOTEBOOKS] == [
        "01_quickstart.ipynb",
        "02_latency_budget.ipynb",
        "03_what_if.ipynb",
        "04_compare_plans.ipynb",
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_committed_without_outputs(path: Path) -> None:
    nbformat = pytest.importorskip("nbformat", reason="nbformat is a dev dependency: pip install -e '.[dev]'")
    book = nbformat.read(path, as_version=4)
    for cell in book.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: strip outputs before committing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
@pytest.mark.slow
def test_notebook_runs(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nbformat = pytest.importorskip("nbformat", reason="nbformat is a dev dependency: pip install -e '.[dev]'")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is a dev dependency: pip install -e '.[dev]'")
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")  # jupyter_core's platformdirs migration warning
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(REPO)
    book = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(book, timeout=TIMEOUT_S, kernel_name="python3", resources={"metadata": {"path": str(REPO)}})
    client.execute()
    errors = [o for c in book.cells if c.cell_type == "code" for o in c.outputs if o.get("output_type") == "error"]
    assert errors == []
