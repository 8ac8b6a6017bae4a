"""The notebooks are committed without outputs; they are run from start to end, their outputs shown, by the site
built with ``PLACEMENT_DOCS_EXECUTE`` (``tests/docs/test_site.py``), where a cell that fails fails the build."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


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
