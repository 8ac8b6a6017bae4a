"""A frontier's capped points solved on Dask, one task each, as a sweep's cases are.

The plan without a cap and the least any plan can use are solved here (they set the caps); each capped point is
then a task that builds its own instance from the scenario with its cap and solves it, and sends its results folder
back as an archive, so a worker needs no file system in common with the client. The frontier's folder is written
whole or not at all, as without Dask.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from placement._errors import PlacementError
from placement.analyses.frontier import Axis, frontier_start, point_folder
from placement.instance.build import build_instance
from placement.outputs.frontier_files import PointRecord, write_table
from placement.outputs.packed import pack_results, unpack_results
from placement.outputs.writer import write_folder, write_results
from placement.plan.solve import solve_instance
from placement.progress import Progress, quiet
from placement.scenario.load import LoadedScenario
from placement.sweep.run import dask_client, describe_client, distributed


def solve_point(loaded: LoadedScenario, maps: bool) -> bytes:
    """One capped point, solved on a worker: its results folder as an archive (:func:`pack_results`)."""
    return pack_results(solve_instance(build_instance(loaded), price_caps=False), maps=maps)


def write_frontier_on_dask(
    loaded: LoadedScenario,
    out_dir: str | Path,
    *,
    axis: Axis = "carbon",
    points: int = 6,
    maps: bool = False,
    equal_service: bool = True,
    workers: int | None = None,
    scheduler: str | None = None,
    progress: Progress = quiet,
) -> Path:
    """Solve a frontier with its capped points as Dask tasks and write its folder whole.

    Parameters
    ----------
    loaded : LoadedScenario
        The scenario (:func:`placement.analyses.frontier.frontier_start`).
    out_dir : str or Path
        The frontier's folder (replaced as a whole).
    axis : {"carbon", "water"}, optional
        What the caps limit.
    points : int, optional
        Points, the plan without a cap included.
    maps : bool, optional
        Draw each point's maps (on the worker that solves it).
    equal_service : bool, optional
        Keep the points up to the first that serves less than the plan without a cap (every point is solved at
        once; the ones past it are dropped); False: every point.
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
        The scheduler cannot be reached, or a point failed on its worker (nothing is written).
    """
    start = frontier_start(loaded, axis=axis, points=points, equal_service=equal_service, progress=progress)

    def writer(folder: Path) -> None:
        write_results(start.first.plan, folder / start.first.folder, maps=maps)
        records = [PointRecord.of(start.first)]
        with dask_client(workers, scheduler) as client:
            progress(f"dask: {describe_client(client, scheduler)}; {len(start.caps_per_year)} capped points")
            futures: dict[Any, tuple[int, float]] = {}
            for index, cap in enumerate(start.caps_per_year, start=1):
                future = client.submit(solve_point, start.capped(cap), maps, key=f"placement-frontier-{index}", pure=False)
                futures[future] = (index, cap)
            for future in distributed().as_completed(list(futures)):
                index, cap = futures[future]
                try:
                    packed = future.result()
                except Exception as exc:
                    raise PlacementError(f"frontier point {index} (cap {cap:,.0f}) failed on its worker: {exc}") from None
                target = unpack_results(packed, folder / point_folder(index))
                records.append(PointRecord.read(index, cap, target))
                progress(f"frontier point {index}: cap {cap:,.0f}: solved")
                future.release()
        value = loaded.scenario.objective.unserved_usd_per_million
        write_table(records, folder, axis, progress, equal_service=equal_service, unserved_usd_per_million=value)

    return write_folder(out_dir, writer)
