"""The plan's LP with the design fixed, for what-ifs: the array LP, or PuLP models when the plan has N+1 rows.

Open sites are fixed (and continuous: an integer column, even a fixed one, makes HiGHS solve a MIP, which has
no duals), node counts continuous and bounded by the power row only (the MILP's node bound is that row
rounded down: left in, the bound, not the row, binds and one more MW reads as worth nothing). Demand the
design cannot serve is found by an elastic solve and then held at that share, so every what-if compares
plans at the same service. Without N+1 this is :class:`placement.optimize.ranging.FixedDesignLP` (HiGHS
re-solves from the previous basis); with N+1 each what-if builds the placement model's blocks with the
design fixed (:func:`fixed_design_blocks`) and solves them through PuLP (:class:`PulpWhatIfs`).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Protocol

import numpy as np

from placement._types import BoolArray, FloatArray
from placement.optimize.model import PlacementBlocks, PlacementModel, placement_blocks, to_placement_model
from placement.optimize.problem import PlacementInput
from placement.optimize.ranging import FixedDesignLP, Resolve, supports
from placement.optimize.shortfall import shortfall_penalty_usd_per_tok_s
from placement.optimize.solver import SolverOptions, solve_problem

__all__ = ["PulpWhatIfs", "WhatIfs", "fixed_design_blocks", "fixed_design_lp", "fixed_design_model"]


def fixed_design_blocks(
    data: PlacementInput,
    is_open: BoolArray,
    *,
    unserved: FloatArray | None = None,
    unserved_penalty_usd_per_tok_s: float | None = None,
) -> PlacementBlocks:
    """The placement model's blocks with open sites fixed and node counts continuous, bounded by power only.

    Parameters
    ----------
    data : PlacementInput
        The arrays.
    is_open : numpy.ndarray of bool
        ``(m,)`` the design's open sites.
    unserved : numpy.ndarray, optional
        ``(c,)`` unserved shares to hold fixed (the plan's shortfall).
    unserved_penalty_usd_per_tok_s : float, optional
        An elastic model instead: demand may go unserved at this price per mean tok/s.

    Returns
    -------
    PlacementBlocks
        The blocks, ready for :func:`~placement.optimize.model.to_placement_model`.
    """
    penalty = 0.0 if unserved is not None else unserved_penalty_usd_per_tok_s
    blocks = placement_blocks(data, unserved_penalty_usd_per_tok_s=penalty)
    if unserved is not None:
        assert blocks.unserved is not None
        blocks.unserved.fix(unserved)
    blocks.open.fix(np.asarray(is_open, dtype=float))
    blocks.open.integer = False
    blocks.nodes.integer = False
    blocks.nodes.upper = np.full(blocks.nodes.size, np.inf)
    return blocks


def fixed_design_model(data: PlacementInput, is_open: BoolArray, unserved: FloatArray | None) -> PlacementModel:
    """The plan's LP in PuLP: open sites fixed, node counts continuous, the plan's shortfall (if any) held fixed."""
    return to_placement_model(fixed_design_blocks(data, is_open, unserved=unserved))


class PulpWhatIfs:
    """The what-ifs of :class:`~placement.optimize.ranging.FixedDesignLP` by building and solving PuLP models.

    They carry the N+1 rows the array LP has not.

    Parameters
    ----------
    data : PlacementInput
        The arrays.
    is_open : numpy.ndarray of bool
        ``(m,)`` the plan's open sites.
    options : SolverOptions
        Time limit and threads of every re-solve (on HiGHS, for duals).
    """

    def __init__(self, data: PlacementInput, is_open: BoolArray, options: SolverOptions) -> None:
        self.data, self.is_open = data, is_open
        self.options = SolverOptions(name="highs", time_limit_s=options.time_limit_s, threads=options.threads)
        self.unserved_share = self._shortfall()
        model = fixed_design_model(data, is_open, self._held())
        report = solve_problem(model.problem, self.options)
        self.status = report.status.has_solution
        self.base_cost = float(report.objective) if self.status else math.inf
        rows = [model.problem.get_constraint_by_name(f"power_{j}") for j in range(data.n_sites)]
        values = np.array([-(row.pi or 0.0) if row is not None else 0.0 for row in rows])
        self._mw_values = np.where(np.abs(values) < 1e-9, 0.0, values) if self.status else np.full(data.n_sites, np.nan)
        caps = [model.problem.get_constraint_by_name(f"cap_{k}") for k in range(len(data.caps))]
        values = np.array([-(row.pi or 0.0) if row is not None else 0.0 for row in caps])
        self._cap_values = np.where(np.abs(values) < 1e-9, 0.0, values) if self.status else np.full(len(caps), np.nan)

    def _held(self) -> FloatArray | None:
        return self.unserved_share if self.unserved_share.any() else None

    def _shortfall(self) -> FloatArray:
        """The least unserved shares of the design: an elastic solve at a price above any way of serving."""
        penalty = shortfall_penalty_usd_per_tok_s(self.data)
        blocks = fixed_design_blocks(self.data, self.is_open, unserved_penalty_usd_per_tok_s=penalty)
        elastic = to_placement_model(blocks)
        if elastic.unserved is None or not solve_problem(elastic.problem, self.options).status.has_solution:
            return np.zeros(self.data.n_commodities)
        share = np.array([min(1.0, max(0.0, var.varValue or 0.0)) for var in elastic.unserved])
        return np.where(share * self.data.mean_demand_tok_s < 1e-6, 0.0, share)

    def cost_usd_per_h(self) -> float:
        """The base solve's total cost (``inf`` without a solution). [USD/h]"""
        return self.base_cost

    def mw_value_usd_per_h(self) -> FloatArray:
        """Cost one more MW saves at each site (the duals of the power rows). [USD/h per MW]"""
        return self._mw_values

    def cap_value_usd_per_h(self) -> FloatArray:
        """``(k,)`` cost one more unit a hour of each carbon or water cap saves (its row's dual). [USD/unit]"""
        return self._cap_values

    def resolve_cap_scaled(self, k: int, factor: float) -> float:
        """Cost with cap ``k``'s limit times ``factor`` (``inf`` if infeasible). [USD/h]"""
        caps = list(self.data.caps)
        caps[k] = dataclasses.replace(caps[k], limit_per_h=caps[k].limit_per_h * factor)
        return self._solve(dataclasses.replace(self.data, caps=tuple(caps)), self.is_open, 0).cost_usd_per_h

    def _solve(self, data: PlacementInput, is_open: BoolArray, site: int) -> Resolve:
        model = fixed_design_model(data, is_open, self._held())
        report = solve_problem(model.problem, self.options)
        if not report.status.has_solution:
            return Resolve(math.inf, 0.0)
        pairs = np.flatnonzero(self.data.pair_site == site)
        load = sum((model.shares[p].varValue or 0.0) * float(self.data.pair_cost_usd_per_h[p]) for p in pairs)
        return Resolve(float(report.objective), float(model.nodes[site].varValue or 0.0), float(load))

    def resolve_toggled(self, site: int) -> Resolve:
        """Cost with one site toggled, every other site as in the plan."""
        toggled = self.is_open.copy()
        toggled[site] = not toggled[site]
        return self._solve(self.data, toggled, site)

    def resolve_open_repriced(self, site: int, *, node_usd_per_h: float, pair_cost_scale: float) -> Resolve:
        """Cost with a closed site opened at another node cost and its pairs' load cost scaled."""
        node, pair = self.data.site_node_usd_per_h.copy(), self.data.pair_cost_usd_per_h.copy()
        node[site] = node_usd_per_h
        pair[self.data.pair_site == site] *= pair_cost_scale
        opened = self.is_open.copy()
        opened[site] = True
        return self._solve(dataclasses.replace(self.data, site_node_usd_per_h=node, pair_cost_usd_per_h=pair), opened, site)

    def resolve_more_power(self, site: int, extra_mw: float) -> float:
        """Cost with ``extra_mw`` more power at one site. [USD/h]"""
        mw = self.data.site_mw_available.copy()
        mw[site] += extra_mw
        return self._solve(dataclasses.replace(self.data, site_mw_available=mw), self.is_open, site).cost_usd_per_h


class WhatIfs(Protocol):
    """What :func:`placement.analyses.explain.explain` asks of the plan's fixed-design LP."""

    unserved_share: FloatArray
    status: bool

    def cost_usd_per_h(self) -> float:
        """The plan's cost at the same service. [USD/h]"""
        ...

    def mw_value_usd_per_h(self) -> FloatArray:
        """Cost one more MW saves at each site. [USD/h per MW]"""
        ...

    def resolve_toggled(self, site: int) -> Resolve:
        """Cost with one site toggled."""
        ...

    def resolve_open_repriced(self, site: int, *, node_usd_per_h: float, pair_cost_scale: float) -> Resolve:
        """Cost with a closed site opened at other prices."""
        ...

    def resolve_more_power(self, site: int, extra_mw: float) -> float:
        """Cost with more power at one site. [USD/h]"""
        ...

    def cap_value_usd_per_h(self) -> FloatArray:
        """Cost one more unit a hour of each carbon or water cap saves. [USD/unit]"""
        ...

    def resolve_cap_scaled(self, k: int, factor: float) -> float:
        """Cost with one cap's limit scaled. [USD/h]"""
        ...


def fixed_design_lp(data: PlacementInput, is_open: BoolArray, options: SolverOptions) -> WhatIfs:
    """The plan's LP with the design fixed: the array LP, or PuLP models when the plan has N+1 rows.

    Parameters
    ----------
    data : PlacementInput
        The scenario's arrays.
    is_open : numpy.ndarray of bool
        The plan's open sites.
    options : SolverOptions
        Solver settings (threads, and the PuLP models' time limit).

    Returns
    -------
    WhatIfs
        ``unserved_share`` (per model row), ``status``, ``cost_usd_per_h()``, ``mw_value_usd_per_h()``,
        ``resolve_toggled(site)``, ``resolve_open_repriced(site, ...)``, ``resolve_more_power(site, mw)``,
        ``cap_value_usd_per_h()`` and ``resolve_cap_scaled(k, factor)``.
    """
    if supports(data):
        return FixedDesignLP(data, is_open, shortfall_penalty_usd_per_tok_s(data), threads=options.threads)
    return PulpWhatIfs(data, is_open, options)
