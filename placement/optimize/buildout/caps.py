"""Carbon and water caps in the build-out: a yearly limit on what a plan's energy uses, in every year and scenario.

A plan draws, at each site in each year and scenario, the idle power of every node in service all year and the
load-following power of the tokens it serves (:func:`site_energy_mwh_per_year`, the energy the written tables
report). A cap (:class:`~placement.optimize.buildout.input.YearCap`) counts that energy at a figure per MWh drawn at
each site (grid tCO2e, or m3 of water; zero at sites it does not count) and holds the sum to its yearly limit: one
row per cap, year and scenario (:func:`define_caps`), the installed fleet's idle draw a constant of the row.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from placement._types import FloatArray, IntArray
from placement.optimize.buildout.input import BuildoutInput, BuildoutSolution, YearCap
from placement.optimize.linear import ColumnBlock, LinearModel, RowBlock

HOURS_PER_YEAR = 8760.0
"""Hours in a (non-discounted) year: the caps are on physical tonnes and m3, as the tables report them."""


def site_energy_mwh_per_year(data: BuildoutInput, solution: BuildoutSolution) -> FloatArray:
    """``(M, Y, S)`` energy each site draws in each year and scenario: idle nodes in service plus the load. [MWh]

    Parameters
    ----------
    data : BuildoutInput
        The arrays (``node_idle_mw`` and ``node_load_mw`` given).
    solution : BuildoutSolution
        The plan.

    Returns
    -------
    numpy.ndarray
        Over a year of 8760 h. [MWh]
    """
    idle_mw, load_mw = _power_arrays(data)
    idle = np.einsum("mays,ma->mys", solution.nodes, idle_mw)
    per_tok = _load_mw_per_tok_s(data, load_mw)  # (M, K, A, Y, S)
    load = np.einsum("mkayst,mkays,yst->mys", solution.served_tok_s, per_tok, data.energy_weight)
    if data.site_open_mw is not None:  # an open site's warm-up nodes
        idle = idle + (solution.first.open * data.site_open_mw[:, None])[:, :, None]
    return np.asarray((idle + load) * HOURS_PER_YEAR)


def cap_use_per_year(data: BuildoutInput, solution: BuildoutSolution, cap: YearCap) -> FloatArray:
    """``(Y, S)`` what a plan uses of a cap's resource in each year and scenario. [unit]"""
    return np.asarray(np.einsum("mys,m->ys", site_energy_mwh_per_year(data, solution), cap.per_mwh))


def cap_breaches(data: BuildoutInput, solution: BuildoutSolution, *, rel_tol: float = 1e-6) -> list[str]:
    """One line per cap a plan breaks: the cap, its limit, the years and scenarios over it and by how much.

    Parameters
    ----------
    data : BuildoutInput
        The arrays and their caps.
    solution : BuildoutSolution
        The plan (rounded or not).
    rel_tol : float, optional
        Relative tolerance on the limit.

    Returns
    -------
    list of str
        Empty when every cap holds.
    """
    out = []
    for cap in data.caps:
        use = cap_use_per_year(data, solution, cap)
        over = use > cap.limit_per_year * (1 + rel_tol) + rel_tol
        if over.any():
            y, s = np.nonzero(over)
            worst = float(use.max())
            out.append(
                f"the {cap.name} cap of {cap.limit_per_year:,.6g} {cap.unit} a year is broken in {len(y)} "
                f"year-scenarios (year index {int(y[0])}, scenario index {int(s[0])} first; at most {worst:,.6g} {cap.unit})"
            )
    return out


def cap_excess(data: BuildoutInput, solution: BuildoutSolution) -> list[FloatArray]:
    """``(Y, S)`` per cap: how far the plan is above its limit (0 where within). [unit]"""
    return [np.maximum(cap_use_per_year(data, solution, cap) - cap.limit_per_year, 0.0) for cap in data.caps]


def held_back(data: BuildoutInput, excess: list[FloatArray], *, factor: float = 1.0) -> BuildoutInput:
    """The arrays with each cap's model limit lowered by ``factor`` times ``excess`` more (and a little over it).

    Lowering a limit moves load off the sites a cap counts, but the rounding of their last node may stay; a
    caller that backs off again passes a growing ``factor`` so the limit reaches below the rounding in a few steps.
    """
    caps = []
    for cap, more in zip(data.caps, excess, strict=True):
        before = np.zeros_like(more) if cap.held_back is None else cap.held_back
        caps.append(replace(cap, held_back=np.asarray(before + more * factor * 1.01 + 1e-9 * (more > 0))))
    return replace(data, caps=tuple(caps))


def installed_use_per_year(data: BuildoutInput, cap: YearCap) -> FloatArray:
    """``(Y,)`` what the installed fleet's idle draw uses of a cap each year, whatever the plan does. [unit]"""
    idle_mw, _ = _power_arrays(data)
    return np.asarray(np.einsum("may,ma,m->y", data.existing_nodes, idle_mw, cap.per_mwh) * HOURS_PER_YEAR)


def _power_arrays(data: BuildoutInput) -> tuple[FloatArray, FloatArray]:
    if data.node_idle_mw is None or data.node_load_mw is None:
        raise ValueError("a build-out's energy needs node_idle_mw and node_load_mw")
    return data.node_idle_mw, data.node_load_mw


def _load_mw_per_tok_s(data: BuildoutInput, load_mw: FloatArray) -> FloatArray:
    """``(M, K, A, Y, S)`` load-following MW of 1 token/s served (0 where a node cannot serve the class). [MW]"""
    goodput = data.goodput_mkays
    per_tok = np.where(goodput > 0, 1.0 / np.maximum(goodput, 1e-300), 0.0)  # (M, K, A, Y, S)
    return np.asarray(load_mw[:, None, :, None, None] * per_tok)


def define_caps(
    lm: LinearModel,
    data: BuildoutInput,
    service: tuple[IntArray, IntArray],
    served: tuple[ColumnBlock, IntArray],
    open_block: ColumnBlock | None = None,
) -> list[tuple[RowBlock, int, IntArray, IntArray]]:
    """One row per cap, year and scenario: the plan's yearly use within the cap's (held) limit.

    The purchases in service draw their idle power all year, the served tokens their load-following power over
    the day's energy weight; the installed nodes' idle draw is taken off the limit.

    Parameters
    ----------
    lm : LinearModel
        The model (rows added).
    data : BuildoutInput
        The arrays and their caps.
    service : tuple
        ``(unit, column)`` of the purchases in service (unit numbers ``(j, h, y, s)`` in C order).
    served : tuple
        The ``z`` columns and their ``(n, 6)`` keys (site, class, accelerator, year, scenario, slice).
    open_block : ColumnBlock, optional
        The ``open_j_y`` columns, ``(M, Y)`` in C order: an open site draws :attr:`BuildoutInput.site_open_mw`.

    Returns
    -------
    list of tuple
        Each cap's row block, its index, and the year and scenario of each row (a year-scenario whose use no
        column can change has no row: :func:`cap_breaches` checks it).
    """
    if not data.caps:
        return []
    _, _, a, n_years, n_scen, _ = data.shape
    idle_mw, load_mw = _power_arrays(data)
    unit, buy_cols = service
    bj, bh, rest = unit // (a * n_years * n_scen), (unit // (n_years * n_scen)) % a, unit % (n_years * n_scen)
    block, z_key = served
    zj, zk, zh, zy, zs, zt = z_key.T
    z_mw = _load_mw_per_tok_s(data, load_mw)[zj, zk, zh, zy, zs] * data.energy_weight[zy, zs, zt]
    row = np.concatenate([rest, zy * n_scen + zs])
    cols = np.concatenate([buy_cols, block.cols])
    mw = np.concatenate([idle_mw[bj, bh], z_mw])
    site = np.concatenate([bj, zj])
    if open_block is not None and data.site_open_mw is not None:  # each open site's warm-up nodes, in every scenario
        oj, oy, os_ = (axis.ravel() for axis in np.indices((data.node_mw.shape[0], n_years, n_scen)))
        row = np.concatenate([row, oy * n_scen + os_])
        cols = np.concatenate([cols, open_block.cols[oj * n_years + oy]])
        mw = np.concatenate([mw, data.site_open_mw[oj]])
        site = np.concatenate([site, oj])
    out = []
    for c, cap in enumerate(data.caps):
        value = mw * cap.per_mwh[site] * HOURS_PER_YEAR
        keep = value != 0
        upper = (cap.model_limit(n_years, n_scen) - installed_use_per_year(data, cap)[:, None]).ravel()
        used, local = np.unique(row[keep], return_inverse=True)  # a year-scenario with no column is no row
        y, s = np.divmod(used, n_scen)
        labels = [f"{c}_{yy}_{ss}" for yy, ss in zip(y.tolist(), s.tolist(), strict=True)]
        rows = lm.add_rows("cap", labels, row=local, col=cols[keep], value=value[keep], upper=upper[used], size=len(used))
        out.append((rows, c, y, s))
    return out
