"""The record of a build-out plan's N+1 spares (:mod:`placement.optimize.buildout.spares` fills it)."""

from __future__ import annotations

from dataclasses import dataclass

from placement._types import BoolArray, FloatArray, IntArray
from placement.optimize.problem import PlacementInput


@dataclass(frozen=True)
class YearProtection:
    """One year and scenario of a protected build-out, as the single-year machinery saw it.

    Parameters
    ----------
    view : PlacementInput
        The year as a single-year plan's arrays (:func:`placement.optimize.buildout.spares.year_view`).
    pairs : numpy.ndarray of int
        The build-out's pair of each of the view's pairs (those whose class the site's spare part serves).
    nodes : numpy.ndarray of int
        ``(M,)`` each site's nodes counted in its spare part, spares included
        (:func:`placement.optimize.buildout.spares.capacity_in_part`). [nodes]
    failover_share : dict
        Per loss key (:meth:`PlacementInput.failure_scenarios`), share of each row re-routed over each of the view's
        pairs.
    """

    view: PlacementInput
    pairs: IntArray
    nodes: IntArray
    failover_share: dict[int, FloatArray]


@dataclass(frozen=True)
class Protection:
    """The N+1 spares of a build-out plan, and the plan before them.

    Parameters
    ----------
    base_open : numpy.ndarray of bool
        ``(M, Y)`` sites open before the spares.
    base_mw_reserved : numpy.ndarray
        ``(M, Y)`` MW reserved before the spares. [MW]
    base_buy, base_nodes : numpy.ndarray
        ``(M, A, Y, S)`` purchases and nodes in service before the spares. [nodes]
    spare_part : numpy.ndarray of int
        ``(M, Y, S)`` the accelerator each site's spares are bought in and its capacity is counted in.
    years : dict
        ``(year index, scenario) -> YearProtection``.
    """

    base_open: BoolArray
    base_mw_reserved: FloatArray
    base_buy: FloatArray
    base_nodes: FloatArray
    spare_part: IntArray
    years: dict[tuple[int, int], YearProtection]
