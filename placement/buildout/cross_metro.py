"""Cross-metro prefill in the build-out: the single-year plan's cross-metro columns as extra routing columns per year.

The instance the build-out is built on makes the cross-metro columns a single-year plan offers
(:mod:`placement.instance.cross_metro`: a decode site D users reach, a prefill site P within the pools' round-trip
allowance, each column inside its TTFT objective with the sites' round trip, permitted by residency). The build-out
merges commodities into rows of its own, so a column is offered to a build-out row where every commodity of the row
has it (the same D and P) in the single-year plan. Each is a pair of the build-out at D that also loads P: it carries
the decode pool's node-equivalents per token/s at D and the prefill pool's at P, each over the class served whole at
that site (the build-out's capacity counts a site's load in tokens served whole there), and the WAN transport of its
KV (``serving.cross_metro_prefill.wan_usd_per_gb``) per token. The pools are the scenario's first accelerator's (the
one the instance is built on): with a fleet mix their node-equivalents stand for every part, and their TTFT takes the
slowest part either site may run (the extra node time of its whole-node profile), a column missing an objective then
left out.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from placement._types import BoolArray, FloatArray, IntArray
from placement.buildout.ladder import GroupRungs
from placement.instance.cross_metro import CrossMetro
from placement.instance.record import Instance
from placement.optimize.buildout.input import BuildoutInput
from placement.scenario.sections import CrossMetroSection

SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class BuildoutCrossMetro:
    """The cross-metro columns appended to a build-out's pairs (the last ``len(row)`` of them).

    Parameters
    ----------
    first : int
        Index of the first among the build-out's pairs.
    row, decode_site, prefill_site, klass, option : numpy.ndarray of int
        ``(q,)`` build-out row, the site users reach, the prefill site, the class and the profile each runs (an index
        of ``cross.options``).
    cross : CrossMetro
        The instance's cross-metro columns and profiles.
    slower_ms : numpy.ndarray or None
        ``(q,)`` how much longer the slowest part either site may run takes at the node than the scenario's part the
        pools were sized on (0 with one part), added to each column's TTFT; None: 0. [ms]
    """

    first: int
    row: IntArray
    decode_site: IntArray
    prefill_site: IntArray
    klass: IntArray
    option: IntArray
    cross: CrossMetro
    slower_ms: FloatArray | None = None

    @property
    def slower(self) -> FloatArray:
        """``(q,)`` :attr:`slower_ms`, 0 where not given. [ms]"""
        return np.zeros(len(self.row)) if self.slower_ms is None else self.slower_ms

    def __len__(self) -> int:
        return len(self.row)

    @property
    def site_rtt_ms(self) -> FloatArray:
        """``(q,)`` round trip between each column's decode and prefill site. [ms]"""
        return np.asarray(self.cross.site_rtt_ms[self.decode_site, self.prefill_site], dtype=float)


def buildout_columns(instance: Instance, row_of_commodity: IntArray, n_rows: int) -> tuple[IntArray, ...]:
    """``(row, decode, prefill, class, option)`` of every build-out row's cross-metro columns.

    A build-out row gets a (decode, prefill) column where every one of its commodities' single-year rows has it.

    Parameters
    ----------
    instance : Instance
        The build-out's instance, with its cross-metro columns (``instance.cross_metro``).
    row_of_commodity : numpy.ndarray of int
        ``(c,)`` the build-out row of each commodity (-1: none).
    n_rows : int
        Build-out rows.
    """
    cross = instance.cross_metro
    none = np.zeros(0, dtype=np.int64)
    if cross is None or not len(cross.pairs):
        return none, none, none, none, none
    pairs = cross.pairs
    by_single: dict[int, dict[tuple[int, int], int]] = {}
    for q, (r, d, p) in enumerate(zip(pairs.row.tolist(), pairs.decode_site.tolist(), pairs.prefill_site.tolist(), strict=True)):
        by_single.setdefault(r, {})[(d, p)] = q
    single = instance.row_of_commodity
    out: list[tuple[int, int]] = []  # (build-out row, single-year column)
    for r in range(n_rows):
        members = np.flatnonzero(row_of_commodity == r)
        rows = set(single[members].tolist())
        if not len(members) or -1 in rows:
            continue
        common: set[tuple[int, int]] | None = None
        for s in rows:
            found = set(by_single.get(s, {}))
            common = found if common is None else common & found
        first = by_single.get(next(iter(rows)), {})
        out += [(r, first[key]) for key in sorted(common or ())]
    if not out:
        return none, none, none, none, none
    row, column = (np.array(v, dtype=np.int64) for v in zip(*out, strict=True))
    return row, pairs.decode_site[column], pairs.prefill_site[column], pairs.klass[column], pairs.option[column]


def slower_parts_ms(instance: Instance, groups: tuple[GroupRungs, ...]) -> FloatArray:
    """``(M, K)`` how much longer the slowest part a site may run takes at the node than the instance's part. [ms]

    The groups' loosest rungs are the slowest node of the parts each site may run (:mod:`placement.buildout.ladder`);
    the instance's profiles are the scenario's first accelerator's, on which the cross-metro pools were sized.
    """
    m, k = len(instance.sites), len(instance.classes)
    out = np.zeros((m, k))
    for group in groups:
        for j in group.columns.tolist():
            own = instance.profiles_at(j)
            out[j] = [max(rungs[0].fixed_ttft_ms - p.fixed_ttft_ms, 0.0) for rungs, p in zip(group.rungs, own, strict=True)]
    return out


def _inside_objective(instance: Instance, columns: BuildoutCrossMetro, row_of_commodity: IntArray) -> BoolArray:
    """``(q,)`` columns whose every commodity meets its TTFT objective (the slowest part's extra node time included)."""
    members = np.flatnonzero(row_of_commodity >= 0)
    by_row = {r: members[row_of_commodity[members] == r] for r in np.unique(columns.row).tolist()}
    objective = np.array([w.ttft_p99_ms for w in instance.classes])
    inside = np.ones(len(columns), dtype=bool)
    for q, r in enumerate(columns.row.tolist()):
        c = by_row[r]
        ttft = cross_metro_ttft_ms(instance, columns, c, np.full(len(c), columns.first + q, dtype=np.int64))
        inside[q] = bool((ttft <= objective[instance.commodity_class[c]] + 1e-9).all())
    return inside


def with_cross_metro(
    data: BuildoutInput,
    instance: Instance,
    row_of_commodity: IntArray,
    spec: CrossMetroSection,
    groups: tuple[GroupRungs, ...] = (),
) -> tuple[BuildoutInput, BuildoutCrossMetro | None]:
    """The build-out's arrays with the cross-metro columns appended as pairs at their decode site loading their prefill site.

    Parameters
    ----------
    data : BuildoutInput
        The arrays with the pairs served whole.
    instance : Instance
        The build-out's instance (its cross-metro columns and each site's class profiles).
    row_of_commodity : numpy.ndarray of int
        ``(c,)`` the build-out row of each commodity.
    spec : CrossMetroSection
        ``serving.cross_metro_prefill`` (the WAN price).
    groups : tuple of GroupRungs, optional
        The build-out's site groups (:func:`placement.buildout.ladder.groups_of`): with a fleet mix a column's TTFT
        takes the slowest part either site may run, and a column that then misses an objective is left out.

    Returns
    -------
    tuple
        The arrays, and the columns (None where there are none).
    """
    cross = instance.cross_metro
    row, decode, prefill, klass, option = buildout_columns(instance, row_of_commodity, data.row_class.size)
    if cross is None or not len(row):
        return data, None
    options = cross.options
    whole = np.array([[p.nodes_per_tok_s for p in instance.profiles_at(j)] for j in range(len(instance.sites))])  # (M, K)
    decode_nodes = np.array([o.decode_nodes_per_tok_s for o in options])[option]
    prefill_nodes = np.array([o.prefill_nodes_per_tok_s for o in options])[option]
    wan = np.array([o.kv_gb_per_tok for o in options])[option] * spec.wan_usd_per_gb * SECONDS_PER_HOUR
    n = data.pair_row.size
    slower = slower_parts_ms(instance, groups)
    columns = BuildoutCrossMetro(
        n, row, decode, prefill, klass, option, cross, np.maximum(slower[decode, klass], slower[prefill, klass])
    )
    keep = _inside_objective(instance, columns, row_of_commodity)
    if not keep.any():
        return data, None
    row, decode, prefill, klass, option = (a[keep] for a in (row, decode, prefill, klass, option))
    columns = BuildoutCrossMetro(n, row, decode, prefill, klass, option, cross, columns.slower[keep])
    decode_nodes, prefill_nodes, wan = decode_nodes[keep], prefill_nodes[keep], wan[keep]
    return (
        replace(
            data,
            pair_row=np.concatenate([data.pair_row, row]).astype(np.int64),
            pair_site=np.concatenate([data.pair_site, decode]).astype(np.int64),
            pair_load=np.concatenate([data.pair_load_factor, decode_nodes / whole[decode, klass]]),
            pair_remote_site=np.concatenate([data.remote_site, prefill]).astype(np.int64),
            pair_remote_load=np.concatenate([data.remote_load, prefill_nodes / whole[prefill, klass]]),
            pair_usd_per_h_per_tok_s=np.concatenate([data.pair_usd_per_tok_s, wan]),
        ),
        columns,
    )


def cross_metro_ttft_ms(instance: Instance, columns: BuildoutCrossMetro, commodity: IntArray, pair: IntArray) -> FloatArray:
    """p99 TTFT of commodities served over cross-metro columns: the column's profile and the sites' round trip. [ms]

    Parameters
    ----------
    instance : Instance
        The build-out's instance.
    columns : BuildoutCrossMetro
        The columns.
    commodity : numpy.ndarray of int
        Commodity of each element.
    pair : numpy.ndarray of int
        Build-out pair of each element (every one a cross-metro column).
    """
    q = pair - columns.first
    site = columns.decode_site[q]
    klass = instance.commodity_class[commodity]
    rtt = instance.rtt_ms[instance.commodity_population[commodity], site]
    profiles = [columns.cross.options[o].profile for o in columns.option[q].tolist()]
    round_trips = np.array([p.round_trips for p in profiles])
    fixed = np.array([p.fixed_ttft_ms for p in profiles])
    extra = instance.retrieval_extra_ms[klass, site]
    return np.asarray(round_trips * rtt + fixed + columns.site_rtt_ms[q] + extra + columns.slower[q], dtype=float)
