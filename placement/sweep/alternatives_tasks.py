"""Near-optimal alternatives with the hand-chosen directions solved on Dask, one task each.

The optimum is solved here (it sets the budget). Each hand-chosen direction (fewest sites, least power in a region,
...) depends on the optimum alone, so each is a task: the optimum's start is sent to the workers once, and each task
sends its design's results folder back as an archive (no file system in common with the client). The ``spread``
alternatives (Hop-Skip-Jump) each avoid the sites of every design before them, so they are solved here, in turn,
once the hand-chosen ones are back: only the hand-chosen directions run in parallel. The folder is written whole or
not at all, as without Dask.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from placement._errors import PlacementError
from placement.analyses.alternatives import (
    AlternativesStart,
    Direction,
    alternatives_start,
    check_options,
    design_folder,
    plan_alternatives,
)
from placement.optimize.problem import PlacementSolution
from placement.outputs.alternatives_files import DesignRecord, write_tables
from placement.outputs.packed import pack_results, unpack_results
from placement.outputs.writer import write_folder, write_results
from placement.progress import Progress, quiet
from placement.scenario.load import LoadedScenario
from placement.sweep.run import dask_client, describe_client, distributed


def solve_direction(start: AlternativesStart, index: int, direction: Direction, maps: bool) -> tuple[bytes | None, str]:
    """One hand-chosen alternative, solved on a worker: its results folder as an archive (None: no design) and status."""
    alternative = start.solve(index, direction, [start.plan.solution.open])
    packed = None if alternative.plan is None else pack_results(alternative.plan, maps=maps)
    return packed, alternative.status


def write_alternatives_on_dask(
    loaded: LoadedScenario,
    out_dir: str | Path,
    *,
    slack: float = 0.02,
    count: int = 5,
    directions: Sequence[Direction] = (),
    maps: bool = False,
    workers: int | None = None,
    scheduler: str | None = None,
    progress: Progress = quiet,
) -> Path:
    """Solve the alternatives with the hand-chosen directions as Dask tasks and write the folder whole.

    Parameters
    ----------
    loaded : LoadedScenario
        The scenario (:func:`placement.analyses.alternatives.alternatives_start`).
    out_dir : str or Path
        The run's folder (replaced as a whole).
    slack : float, optional
        Alternatives cost at most this share more than the optimum.
    count : int, optional
        Alternatives after the optimum.
    directions : sequence of Direction, optional
        Hand-chosen directions, one task each; ``spread`` alternatives fill up to ``count``.
    maps : bool, optional
        Draw each design's maps.
    workers : int, optional
        Worker processes of a local cluster (default 2). Ignored with ``scheduler``.
    scheduler : str, optional
        Address of a running Dask scheduler (``tcp://host:port``).
    progress : callable, optional
        Receives a line per step.

    Returns
    -------
    Path
        The folder written.

    Raises
    ------
    PlacementError
        The scheduler cannot be reached, or a task failed on its worker (nothing is written).
    """
    check_options(slack, count, directions)
    start = alternatives_start(loaded, slack=slack, progress=progress, directions=directions)
    planned = plan_alternatives(count, directions)

    def writer(folder: Path) -> None:
        write_results(start.plan, folder / start.optimum.folder, maps=maps)
        records = [DesignRecord.of(start.optimum)]
        earlier = [start.plan.solution.open]
        chosen = [(index, d) for index, d in enumerate(planned, start=1) if d.kind != "spread"]
        if chosen:
            records += _chosen_on_dask(start, chosen, folder, maps=maps, workers=workers, scheduler=scheduler,
                                       progress=progress)  # fmt: skip
        for record in sorted(records[1:], key=lambda r: r.index):  # the spread ones avoid these too
            if record.sites is not None:
                earlier.append(record.sites["open"].astype(bool).to_numpy())
        solved: list[PlacementSolution] = []  # the spread designs at hand here start the solver too
        for index, direction in enumerate(planned, start=1):
            if direction.kind != "spread":
                continue
            alternative = start.solve(index, direction, earlier, progress, starts=solved)
            if alternative.plan is not None:
                write_results(alternative.plan, folder / alternative.folder, maps=maps)
                earlier.append(alternative.plan.solution.open)
                solved.append(alternative.plan.solution)
            records.append(DesignRecord.of(alternative))
        write_tables(records, folder, progress)

    return write_folder(out_dir, writer)


def _chosen_on_dask(
    start: AlternativesStart,
    chosen: list[tuple[int, Direction]],
    folder: Path,
    *,
    maps: bool,
    workers: int | None,
    scheduler: str | None,
    progress: Progress,
) -> list[DesignRecord]:
    """The hand-chosen directions solved as Dask tasks, each design's folder unpacked under ``folder``."""
    records = []
    with dask_client(workers, scheduler) as client:
        progress(f"dask: {describe_client(client, scheduler)}; {len(chosen)} hand-chosen directions")
        shared = client.scatter(start, broadcast=True)
        futures: dict[Any, tuple[int, Direction]] = {}
        for index, direction in chosen:
            key = f"placement-alternative-{index}"
            futures[client.submit(solve_direction, shared, index, direction, maps, key=key, pure=False)] = (index, direction)
        for future in distributed().as_completed(list(futures)):
            index, direction = futures[future]
            try:
                packed, status = future.result()
            except Exception as exc:
                raise PlacementError(f"alternative {index} ({direction.label}) failed on its worker: {exc}") from None
            target = None if packed is None else unpack_results(packed, folder / design_folder(index))
            records.append(DesignRecord.read(index, direction.label, status, target))
            progress(f"alternative {index} ({direction.label}): {status}")
            future.release()
    return records
