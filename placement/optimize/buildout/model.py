"""The build-out model as one :class:`~placement.optimize.linear.LinearModel`, written out to PuLP.

The columns: ``open_j_y`` and ``mw_j_y`` (stage one: sites open and MW reserved per year),
``buy_j_h_y_s`` (nodes bought per site, accelerator, year and scenario), ``u_r_y_s`` (a demand
row's unserved share), ``x_p_y_s`` (its share served over an allowed pair) and ``z_j_k_h_y_s_t``
(tokens/s of class ``k`` served on accelerator ``h``, counted as tokens served whole at the site's loosest node TTFT
rung: a pair's load there is its tokens times :attr:`~placement.optimize.buildout.input.BuildoutInput.pair_load_factor`,
and a cross-metro column also loads its prefill site, :attr:`~placement.optimize.buildout.input.BuildoutInput.remote_site`;
``x`` is priced only by a cross-metro column's WAN transport).

The rows shared with the placement model come from :mod:`placement.optimize.rows`:

- MW reserved only at open sites, within the energized power: :func:`~placement.optimize.rows.power_rows`
  (one row per site and year, the reserved MW drawing 1 MW each);
- nodes in service draw no more than the MW reserved: :func:`~placement.optimize.rows.capacity_rows`
  with the nodes' MW as weights and the reserved MW granting the capacity (per site, year, scenario);
- every demand row is served or left unserved: :func:`~placement.optimize.rows.demand_rows`
  (per row, year and scenario);
- each accelerator's load fits its nodes in service in every slice:
  :func:`~placement.optimize.rows.capacity_rows` with node-equivalents per token/s as weights and the
  purchases still in their life granting the capacity.

The build-out's own rows (:func:`define_sites`, :func:`define_power`, :func:`define_serving`): sites
and MW never go back (years), an open site runs at least one node, and each site's class load is
split over its accelerators. The carbon and water caps (:func:`~placement.optimize.buildout.caps.define_caps`) hold
each year's and scenario's use within its limit. The rows are written concept by concept; :class:`RowOrder`
gives the order the model was always written in (site by site, year by year), which :func:`create_model`
hands to PuLP.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from placement._types import BoolArray, FloatArray, IntArray
from placement.optimize import rows
from placement.optimize.buildout.caps import define_caps
from placement.optimize.buildout.input import BuildoutInput, FirstStage
from placement.optimize.linear import ColumnBlock, LinearModel, PulpModel, RowBlock, to_pulp
from placement.optimize.rows import group_by

KEY_WIDTH = 7
"""Width of a row's position key: the section of the model, then its loop indices."""


@dataclass
class RowOrder:
    """Where each row block's rows sit in the loops the model was written in (site by site, year by year).

    Parameters
    ----------
    keys : list of numpy.ndarray
        ``(rows, KEY_WIDTH)`` position key of every row block's rows, in block order.
    """

    keys: list[IntArray] = field(default_factory=list)

    def place(self, block: RowBlock, *key: IntArray | int) -> None:
        """Record a row block's keys: the section, then one column per loop index (scalars broadcast)."""
        columns = [np.broadcast_to(np.asarray(k, dtype=np.int64), (block.size,)) for k in key]
        columns += [np.zeros(block.size, dtype=np.int64)] * (KEY_WIDTH - len(columns))
        self.keys.append(np.column_stack(columns) if block.size else np.zeros((0, KEY_WIDTH), dtype=np.int64))

    def order(self) -> IntArray:
        """Every row once, in the order of those loops (lexicographic by key)."""
        keys = np.concatenate(self.keys) if self.keys else np.zeros((0, KEY_WIDTH), dtype=np.int64)
        return np.asarray(np.lexsort(keys.T[::-1]), dtype=np.int64)


@dataclass
class BuildoutModel:
    """The build-out's linear model, its column blocks and what each column stands for.

    Parameters
    ----------
    model : LinearModel
        Columns and rows.
    open, mw, buy, unserved, share, served : ColumnBlock
        The column blocks (``open_j_y``, ``mw_j_y``, ``buy_j_h_y_s``, ``u_r_y_s``, ``x_p_y_s``,
        ``z_j_k_h_y_s_t``); ``open`` and ``mw`` in ``(M, Y)`` C order.
    buy_key : numpy.ndarray of int
        ``(n, 4)`` site, accelerator, year bought and scenario of each ``buy`` column.
    unserved_key, share_key : numpy.ndarray of int
        ``(n, 3)`` (row, year, scenario) and (pair, year, scenario) of each ``u`` and ``x`` column.
    served_key : numpy.ndarray of int
        ``(n, 6)`` site, class, accelerator, year, scenario and slice of each ``z`` column.
    rows : RowOrder
        The order the rows are written out in.
    """

    model: LinearModel
    open: ColumnBlock
    mw: ColumnBlock
    buy: ColumnBlock
    unserved: ColumnBlock
    share: ColumnBlock
    served: ColumnBlock
    buy_key: IntArray
    unserved_key: IntArray
    share_key: IntArray
    served_key: IntArray
    rows: RowOrder

    @property
    def cost_blocks(self) -> list[ColumnBlock]:
        """The blocks of the objective (zero costs included; the shares cost only a cross-metro column's WAN)."""
        priced = [self.share] if np.any(self.share.cost) else []
        return [self.open, self.mw, self.buy, self.served, self.unserved, *priced]


def _labels(*parts: IntArray) -> list[str]:
    return ["_".join(str(v) for v in values) for values in zip(*(p.tolist() for p in parts), strict=True)]


def _reservable_mw(data: BuildoutInput) -> FloatArray:
    """``(M, Y)`` MW that may be reserved: energized power less the rounding margin."""
    margin = np.zeros(data.node_mw.shape[0]) if data.power_margin_mw is None else data.power_margin_mw
    return np.asarray(np.maximum(data.site_mw_available - margin[:, None], 0.0))


def _buyable(data: BuildoutInput) -> BoolArray:
    """``(M, A, Y)`` purchases worth a variable: offered, not barred there, at a site with power in a later year of its life."""
    powered = np.asarray(data.site_mw_available > 0)
    alive = data.alive
    later = np.asarray((alive[None, :, :] & powered[:, None, :]).any(axis=2))  # (M, V)
    return np.asarray(data.buyable_at_site & later[:, None, :])


def _sequential_sum(terms: FloatArray) -> FloatArray:
    """Sum over the first axis term by term from 0.0 (the order the rows' constants were always added in)."""
    total = np.zeros(terms.shape[1:])
    for term in terms:
        total = total + term
    return total


def _site_columns(
    lm: LinearModel, data: BuildoutInput, fixed: FirstStage | None, *, relax: bool, opened: BoolArray | None
) -> tuple[ColumnBlock, ColumnBlock]:
    """``open_j_y`` (binary, or continuous when relaxed) and ``mw_j_y``: locked sites open; ``opened`` or ``fixed`` fix them."""
    m, _, _, n_years, _, _ = data.shape
    j, y = np.divmod(np.arange(m * n_years), n_years)
    labels = _labels(j, y)
    lower = np.repeat(data.site_locked.astype(float), n_years)
    upper = np.ones(m * n_years)
    if opened is not None:
        lower = upper = opened.astype(float).ravel()
    if fixed is not None:
        lower = upper = fixed.open.astype(float).ravel()
    cost = data.year_weight_h[y] * data.site_fixed_usd_per_h[j]
    open_block = lm.add_columns("open", labels, lower=lower, upper=upper, cost=cost, integer=not relax)
    mw = lm.add_columns("mw", labels, lower=0.0, cost=data.year_weight_h[y] * data.site_usd_per_h_per_mw[j])
    if fixed is not None:
        mw.fix(fixed.mw_reserved.astype(float).ravel())
    return open_block, mw


def _buy_columns(lm: LinearModel, data: BuildoutInput) -> tuple[ColumnBlock, IntArray]:
    """``buy_j_h_y_s``: nodes bought where they can serve, priced over their life (capex annuity and running cost)."""
    n_scen = data.probability.size
    j, h, b = (np.repeat(axis, n_scen) for axis in np.nonzero(_buyable(data)))
    s = np.tile(np.arange(n_scen), len(j) // n_scen if n_scen else 0)
    cost = data.probability[s] * data.life_cost_usd(j, h, b)
    block = lm.add_columns("buy", _labels(j, h, b, s), lower=0.0, cost=cost, integer=data.integer_nodes, size=len(j))
    return block, np.column_stack([j, h, b, s]).astype(np.int64)


def _routing_columns(lm: LinearModel, data: BuildoutInput) -> tuple[ColumnBlock, ColumnBlock, IntArray, IntArray]:
    """``u_r_y_s`` for every row, ``x_p_y_s`` for its pairs at powered sites (rows with demand only).

    No ``x <= open`` rows: a route needs load served by nodes, nodes need reserved MW, and MW need an open
    site, so routes only reach open sites. (Those rows, one per pair, year and scenario, made the LP relaxation
    of the bundled build-out several times slower; site costs are small beside node costs, so they added
    little to its bound.)
    """
    _, _, _, n_years, n_scen, _ = data.shape
    n_rows = data.row_class.size
    y, s, r = (axis.ravel() for axis in np.indices((n_years, n_scen, n_rows)))
    penalty, daily = data.unserved_usd_per_h_per_tok_s, data.daily_demand_tok_s
    cost = data.probability[s] * data.year_weight_h[y] * penalty * daily[r, y, s]
    unserved = lm.add_columns("u", _labels(r, y, s), lower=0.0, upper=1.0, cost=cost)
    by_row = np.concatenate(group_by(data.pair_row, n_rows)) if data.pair_row.size else np.zeros(0, dtype=np.int64)
    keys = []
    remote = data.remote_site
    for yy in range(n_years):
        powered = data.site_mw_available[:, yy] > 0
        reached = powered[data.pair_site] & ((remote < 0) | powered[np.maximum(remote, 0)])  # both sites of a pair
        for ss in range(n_scen):
            wanted = data.row_demand_tok_s[:, :, yy, ss].max(axis=1) > 0
            kept = by_row[reached[by_row] & wanted[data.pair_row[by_row]]]
            keys.append(np.column_stack([kept, np.full(len(kept), yy), np.full(len(kept), ss)]))
    share_key = np.concatenate(keys).astype(np.int64) if keys else np.zeros((0, 3), dtype=np.int64)
    p, py, ps = share_key.T
    share_cost = data.probability[ps] * data.year_weight_h[py] * daily[data.pair_row[p], py, ps] * data.pair_usd_per_tok_s[p]
    share = lm.add_columns("x", _labels(p, py, ps), lower=0.0, upper=1.0, cost=share_cost, size=len(p))
    return unserved, share, np.column_stack([r, y, s]).astype(np.int64), share_key


def _in_service(data: BuildoutInput, buy_key: IntArray, buy_cols: IntArray) -> tuple[IntArray, IntArray]:
    """The purchases in service in each (site, accelerator, year, scenario): ``(unit, column)`` per entry.

    ``unit`` numbers ``(j, h, y, s)`` in C order; a unit's entries follow the year bought.
    """
    _, _, a, n_years, n_scen, _ = data.shape
    j, h, b, s = buy_key.T
    serves = data.alive[b]  # (n, Y)
    entry, year = np.nonzero(serves)
    unit = ((j[entry] * a + h[entry]) * n_years + year) * n_scen + s[entry]
    order = np.argsort(unit, kind="stable")
    return unit[order].astype(np.int64), buy_cols[entry[order]].astype(np.int64)


def define_sites(lm: LinearModel, order: RowOrder, data: BuildoutInput, open_block: ColumnBlock, mw: ColumnBlock) -> None:
    """MW reserved only at open sites within their power (:func:`~placement.optimize.rows.power_rows`); both never go back."""
    m, _, _, n_years, _, _ = data.shape
    cap = _reservable_mw(data).ravel()
    reserve = rows.power_rows(lm, mw.cols, open_block.cols, np.ones(m * n_years), cap)
    j, y = np.divmod(np.arange(m * n_years), n_years)
    order.place(reserve, 0, j, y, 0)
    later = np.flatnonzero(y > 0)
    local = np.repeat(np.arange(len(later)), 2)
    for kind, name, block in ((1, "keep_open", open_block), (2, "keep_mw", mw)):
        col = np.column_stack([block.cols[later], block.cols[later - 1]]).ravel()
        value = np.tile([1.0, -1.0], len(later))
        kept = lm.add_rows(name, _labels(j[later], y[later]), row=local, col=col, value=value, lower=0.0, size=len(later))
        order.place(kept, 0, j[later], y[later], kind)


def define_power(
    lm: LinearModel,
    order: RowOrder,
    data: BuildoutInput,
    columns: tuple[ColumnBlock, ColumnBlock],
    service: tuple[IntArray, IntArray],
) -> None:
    """Nodes in service draw no more than the MW reserved at their site; an open site runs at least one node.

    The first row is :func:`~placement.optimize.rows.capacity_rows` (the nodes' MW as weights, the MW
    reserved granting 1 MW each, the installed nodes' draw taken off). The second is what "sites once open
    stay open" means for a planner: a site is not left dark (its MW reserved and paid for, nothing running)
    when its first nodes retire.
    """
    open_block, mw = columns
    m, _, a, n_years, n_scen, _ = data.shape
    unit, col = service
    j, h, rest = unit // (a * n_years * n_scen), (unit // (n_years * n_scen)) % a, unit % (n_years * n_scen)
    site_unit = j * n_years * n_scen + rest  # (j, y, s)
    existing = np.moveaxis(data.existing_nodes, 1, 0)  # (A, M, Y)
    drawn_mw = _sequential_sum(existing * np.moveaxis(data.node_mw, 1, 0)[:, :, None])  # (M, Y)
    running_nodes = _sequential_sum(existing)
    n_units = m * n_years * n_scen
    uj, uy, us = (axis.ravel() for axis in np.indices((m, n_years, n_scen)))
    constant = drawn_mw[uj, uy]
    drawn = np.flatnonzero((np.bincount(site_unit, minlength=n_units) > 0) | (constant != 0))
    site_year = uj * n_years + uy
    draw = rows.capacity_rows(
        lm,
        col,
        site_unit,
        data.node_mw[j, h][:, None],
        None,
        -constant,
        drawn,
        np.zeros(len(drawn), dtype=np.int64),
        name="draw",
        granted=(np.arange(n_units), mw.cols[site_year], np.ones(n_units)),
    )
    order.place(draw, 1, uj[drawn], uy[drawn], us[drawn], 0)
    by_unit = np.argsort(site_unit, kind="stable")
    local = np.concatenate([np.arange(n_units), site_unit[by_unit]])
    cols = np.concatenate([open_block.cols[site_year], col[by_unit]])
    values = np.concatenate([-np.ones(n_units), np.ones(len(by_unit))])
    lower = -running_nodes[uj, uy]
    running = lm.add_rows("running", _labels(uj, uy, us), row=local, col=cols, value=values, lower=lower, size=n_units)
    order.place(running, 1, uj, uy, us, 1)


def define_routing(
    lm: LinearModel,
    order: RowOrder,
    data: BuildoutInput,
    columns: tuple[ColumnBlock, ColumnBlock],
    keys: tuple[IntArray, IntArray],
) -> None:
    """Every demand row is served over its pairs or left unserved, per year and scenario.

    The rows are :func:`~placement.optimize.rows.demand_rows`, one commodity per (year, scenario, row).
    """
    unserved, share = columns
    unserved_key, share_key = keys
    _, _, _, n_years, n_scen, _ = data.shape
    n_rows = data.row_class.size
    p, y, s = share_key.T
    commodity = (y * n_scen + s) * n_rows + data.pair_row[p]
    ones = np.ones(n_years * n_scen * n_rows)
    demand = rows.demand_rows(lm, share.cols, commodity, ones, unserved_cols=unserved.cols)
    r, uy, us = unserved_key.T
    order.place(demand, 2, uy, us, r)


@dataclass
class _Serving:
    """The serving rows before their ``z`` columns exist (``z`` numbered locally, in creation order)."""

    z_key: list[tuple[int, int, int, int, int, int]] = field(default_factory=list)
    balance: list[tuple[list[int], list[float], list[int]]] = field(default_factory=list)  # x cols, demand, z
    balance_key: list[tuple[int, ...]] = field(default_factory=list)
    capacity_key: list[tuple[int, ...]] = field(default_factory=list)
    capacity_unit: list[int] = field(default_factory=list)  # (j, h, y, s) of each capacity row
    z_row: list[int] = field(default_factory=list)  # capacity row of each z
    z_weight: list[float] = field(default_factory=list)  # node-equivalents per token/s of each z


def _site_class_entries(data: BuildoutInput) -> list[tuple[IntArray, FloatArray]]:
    """Per (site, class) in C order: the pairs loading the site (at it, or as their second site) and their loads.

    A pair's load is its node-equivalents per token/s served whole there (:attr:`BuildoutInput.pair_load_factor` at
    its site, :attr:`BuildoutInput.remote_load` at its second site).
    """
    m, k_count = data.node_mw.shape[0], data.goodput_tok_s.shape[0]
    classes = data.row_class[data.pair_row]
    remote = data.remote_site
    second = np.flatnonzero(remote >= 0)
    site = np.concatenate([data.pair_site, remote[second]])
    pair = np.concatenate([np.arange(data.pair_row.size), second])
    load = np.concatenate([data.pair_load_factor, data.remote_load[second]])
    groups = group_by(site * k_count + classes[pair], m * k_count)
    return [(pair[g].astype(np.int64), load[g]) for g in groups]


def _serving_layout(data: BuildoutInput, share_col: IntArray, usable: BoolArray) -> _Serving:
    """Walk years, scenarios, sites, slices and classes in the model's order: which ``z`` columns and rows exist."""
    m, k_count, a, n_years, n_scen, n_slices = data.shape
    entries = _site_class_entries(data)
    goodput = data.goodput_mkays
    out = _Serving()
    for y in range(n_years):
        for s in range(n_scen):
            for j in range(m):
                if data.site_mw_available[j, y] <= 0:
                    continue
                hs = [h for h in range(a) if usable[j, h, y, s]]
                for t in range(n_slices):
                    load: dict[int, list[int]] = {h: [] for h in hs}
                    for k in range(k_count):
                        every, loads = entries[j * k_count + k]
                        kept = share_col[every, y, s] >= 0
                        pairs = every[kept]
                        if not len(pairs):
                            continue
                        demand = data.row_demand_tok_s[data.pair_row[pairs], t, y, s] * loads[kept]
                        zs = []
                        for h in hs:
                            if goodput[j, k, h, y, s] > 0:
                                zs.append(len(out.z_key))
                                load[h].append(len(out.z_key))
                                out.z_key.append((j, k, h, y, s, t))
                                out.z_weight.append(1.0 / float(goodput[j, k, h, y, s]))
                                out.z_row.append(-1)
                        out.balance.append((share_col[pairs, y, s].tolist(), demand.tolist(), zs))
                        out.balance_key.append((3, y, s, j, t, 0, k))
                    for h, zs in load.items():
                        if zs:
                            for z in zs:
                                out.z_row[z] = len(out.capacity_unit)
                            out.capacity_unit.append(((j * a + h) * n_years + y) * n_scen + s)
                            out.capacity_key.append((3, y, s, j, t, 1, h))
    return out


def _concat(parts: list[IntArray] | list[FloatArray], dtype: type) -> NDArray[Any]:
    return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype=dtype)


def define_serving(
    lm: LinearModel, order: RowOrder, data: BuildoutInput, share: tuple[ColumnBlock, IntArray], service: tuple[IntArray, IntArray]
) -> tuple[ColumnBlock, IntArray]:
    """Each site's class load is served by its accelerators; each accelerator's load fits its nodes in every slice.

    The second row is :func:`~placement.optimize.rows.capacity_rows`: load in node-equivalents per token/s,
    the purchases still in their life granting one node each, the nodes installed before the fixed capacity.
    Returns the ``z`` columns and their keys.
    """
    m, _, a, n_years, n_scen, _ = data.shape
    unit, col = service
    n_units = m * a * n_years * n_scen
    existing = np.broadcast_to(data.existing_nodes[..., None], (m, a, n_years, n_scen)).ravel()
    usable = ((np.bincount(unit, minlength=n_units) > 0) | (existing > 0)).reshape(m, a, n_years, n_scen)
    share_col = np.full((data.pair_row.size, n_years, n_scen), -1, dtype=np.int64)
    p, y, s = share[1].T
    share_col[p, y, s] = share[0].cols
    layout = _serving_layout(data, share_col, usable)
    z_key = np.asarray(layout.z_key, dtype=np.int64).reshape(-1, 6)
    zj, zk, zh, zy, zs, zt = z_key.T
    energy, per_tok = data.energy_weight, data.energy_mkays
    cost = data.probability[zs] * data.year_weight_h[zy] * energy[zy, zs, zt] * per_tok[zj, zk, zh, zy, zs]
    served = lm.add_columns("z", _labels(zj, zk, zh, zy, zs, zt), lower=0.0, cost=cost, size=len(zj))
    z_cols = served.cols
    row = _concat([np.full(len(x) + len(zl), i) for i, (x, _, zl) in enumerate(layout.balance)], np.int64)
    cols = _concat([np.concatenate([np.asarray(x, dtype=np.int64), z_cols[zl]]) for x, _, zl in layout.balance], np.int64)
    values = _concat([np.concatenate([np.asarray(d, dtype=float), -np.ones(len(zl))]) for _, d, zl in layout.balance], float)
    bkey = np.asarray(layout.balance_key, dtype=np.int64).reshape(-1, KEY_WIDTH)
    labels = _labels(*bkey.T[[3, 6, 1, 2, 4]])
    balance = lm.add_rows("serve", labels, row=row, col=cols, value=values, lower=0.0, upper=0.0, size=len(bkey))
    order.place(balance, *bkey.T)
    cap_unit = np.asarray(layout.capacity_unit, dtype=np.int64)
    by_unit = group_by(unit, n_units)
    grant_row = _concat([np.full(len(by_unit[u]), i) for i, u in enumerate(cap_unit.tolist())], np.int64)
    grant_col = _concat([col[by_unit[u]] for u in cap_unit.tolist()], np.int64)
    capacity = rows.capacity_rows(
        lm,
        z_cols,
        np.asarray(layout.z_row, dtype=np.int64),
        np.asarray(layout.z_weight, dtype=float)[:, None],
        None,
        existing[cap_unit].astype(float),
        np.arange(len(cap_unit), dtype=np.int64),
        np.zeros(len(cap_unit), dtype=np.int64),
        granted=(grant_row, grant_col, np.ones(len(grant_col))),
    )
    order.place(capacity, *np.asarray(layout.capacity_key, dtype=np.int64).reshape(-1, KEY_WIDTH).T)
    return served, z_key


def build_model(
    data: BuildoutInput, *, fixed: FirstStage | None = None, relax: bool = False, opened: BoolArray | None = None
) -> BuildoutModel:
    """The whole model, step by step.

    Parameters
    ----------
    data : BuildoutInput
        The arrays.
    fixed : FirstStage, optional
        Fix the sites and MW (evaluate a plan's first stage in every scenario).
    relax : bool, optional
        Continuous ``open`` (the LP relaxation, a lower bound).
    opened : numpy.ndarray of bool, optional
        ``(M, Y)`` fix which sites are open, MW left free.

    Returns
    -------
    BuildoutModel
        The linear model and its blocks; the objective is the expected NPV of cost (sites and MW shared,
        node capex annuities while in service, running cost, energy, unserved; the installed fleet's running
        cost is the model's constant).
    """
    lm, order = LinearModel("buildout"), RowOrder()
    open_block, mw = _site_columns(lm, data, fixed, relax=relax, opened=opened)
    buy, buy_key = _buy_columns(lm, data)
    unserved, share, unserved_key, share_key = _routing_columns(lm, data)
    if fixed is None:
        define_sites(lm, order, data, open_block, mw)
    service = _in_service(data, buy_key, buy.cols)
    define_power(lm, order, data, (open_block, mw), service)
    define_routing(lm, order, data, (unserved, share), (unserved_key, share_key))
    served, served_key = define_serving(lm, order, data, (share, share_key), service)
    for block, c, y, s in define_caps(lm, data, service, (served, served_key), open_block):
        order.place(block, 5, c, y, s)
    lm.objective_constant = float(np.einsum("may,may,y->", data.existing_nodes, data.running_may, data.year_weight_h))
    return BuildoutModel(lm, open_block, mw, buy, unserved, share, served, buy_key, unserved_key, share_key, served_key, order)


def scenario_costs(data: BuildoutInput, bm: BuildoutModel) -> list[tuple[IntArray, FloatArray]]:
    """Each scenario's NPV as (columns, coefficients) of one model (the objective's terms with probability 1).

    The constant (the installed fleet's running cost) is ``bm.model.objective_constant`` in every scenario.

    Parameters
    ----------
    data : BuildoutInput
        The arrays.
    bm : BuildoutModel
        The model.

    Returns
    -------
    list of tuple
        One per scenario. [USD]
    """
    weight = data.year_weight_h
    j, y = np.divmod(np.arange(bm.open.size), data.year_weight_h.size)
    shared_cols = np.concatenate([bm.open.cols, bm.mw.cols])
    shared = np.concatenate([weight[y] * data.site_fixed_usd_per_h[j], weight[y] * data.site_usd_per_h_per_mw[j]])
    bj, bh, bb, bs = bm.buy_key.T
    buy = data.life_cost_usd(bj, bh, bb)
    zj, zk, zh, zy, zs, zt = bm.served_key.T
    served = weight[zy] * data.energy_weight[zy, zs, zt] * data.energy_mkays[zj, zk, zh, zy, zs]
    ur, uy, us = bm.unserved_key.T
    unserved = weight[uy] * data.unserved_usd_per_h_per_tok_s * data.daily_demand_tok_s[ur, uy, us]
    xp, xy, xs = bm.share_key.T
    routed = weight[xy] * data.daily_demand_tok_s[data.pair_row[xp], xy, xs] * data.pair_usd_per_tok_s[xp]
    out = []
    for s in range(data.probability.size):
        cols = [shared_cols, bm.buy.cols[bs == s], bm.served.cols[zs == s], bm.unserved.cols[us == s], bm.share.cols[xs == s]]
        values = [shared, buy[bs == s], served[zs == s], unserved[us == s], routed[xs == s]]
        out.append((np.concatenate(cols), np.concatenate(values)))
    return out


def add_regret(data: BuildoutInput, bm: BuildoutModel, alone_usd: list[float]) -> ColumnBlock:
    """Make the objective the largest regret against each scenario's own optimum, ``max_regret_musd``.

    In millions: HiGHS finds USD rows with a free variable ill-scaled. Every other cost is dropped.

    Parameters
    ----------
    data : BuildoutInput
        The arrays.
    bm : BuildoutModel
        The model (changed in place).
    alone_usd : list of float
        ``(S,)`` each scenario's own optimum (wait-and-see). [USD]

    Returns
    -------
    ColumnBlock
        The regret column. [MUSD]
    """
    lm = bm.model
    costs = scenario_costs(data, bm)
    existing = lm.objective_constant
    for block in lm.columns:
        block.cost = np.zeros(block.size)
    lm.objective_constant = 0.0
    worst = lm.add_columns("max_regret_musd", None, lower=-np.inf, cost=1.0)
    local = np.concatenate([np.full(len(c) + 1, s, dtype=np.int64) for s, (c, _) in enumerate(costs)])
    cols = np.concatenate([np.append(c, worst.start) for c, _ in costs])
    values = np.concatenate([np.append(v * 1e-6, -1.0) for _, v in costs])
    upper = [-(existing * 1e-6 - alone * 1e-6) for alone in alone_usd]
    n = len(costs)
    regret = lm.add_rows("regret", _labels(np.arange(n)), row=local, col=cols, value=values, upper=upper, size=n)
    bm.rows.place(regret, 4, np.arange(n))
    return worst


def to_pulp_model(bm: BuildoutModel, *, objective: list[ColumnBlock] | None = None) -> PulpModel:
    """Write the model to PuLP in the order it was always written in, rows unnamed (``_C1``, ``_C2``, ...).

    Parameters
    ----------
    bm : BuildoutModel
        The model.
    objective : list of ColumnBlock, optional
        The blocks of the objective (default :attr:`BuildoutModel.cost_blocks`).

    Returns
    -------
    PulpModel
        The problem and its variables.
    """
    blocks = bm.cost_blocks if objective is None else objective
    return to_pulp(bm.model, row_order=bm.rows.order(), named_rows=False, objective=blocks)


def create_model(
    data: BuildoutInput, *, fixed: FirstStage | None = None, relax: bool = False, opened: BoolArray | None = None
) -> tuple[PulpModel, BuildoutModel]:
    """:func:`build_model` written to PuLP.

    Parameters
    ----------
    data : BuildoutInput
        The arrays.
    fixed, relax, opened
        As :func:`build_model`.

    Returns
    -------
    tuple
        The PuLP problem with its variables, and the model.
    """
    bm = build_model(data, fixed=fixed, relax=relax, opened=opened)
    return to_pulp_model(bm), bm


def regret_model(
    data: BuildoutInput, alone_usd: list[float], *, relax: bool = False, opened: BoolArray | None = None
) -> tuple[PulpModel, BuildoutModel]:
    """The min-max-regret model (:func:`add_regret`) written to PuLP.

    Parameters
    ----------
    data : BuildoutInput
        The arrays.
    alone_usd : list of float
        ``(S,)`` each scenario's own optimum. [USD]
    relax, opened
        As :func:`build_model`.

    Returns
    -------
    tuple
        The PuLP problem with its variables, and the model.
    """
    bm = build_model(replace(data, probability=np.zeros_like(data.probability)), relax=relax, opened=opened)
    worst = add_regret(data, bm, alone_usd)
    return to_pulp_model(bm, objective=[worst]), bm
