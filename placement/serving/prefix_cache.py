"""The KV cache as infrastructure: cache tiers per node, prefix reuse per class, and the hit rate a site gets.

A prompt's cached tokens come from two places (``data/serving/prefix_reuse.csv``):

- **the session's earlier turns** (``session_share`` of the prompt): the next turn arrives ``turn_gap_s`` later on
  average (exponential gaps) at the same site, and hits if the cache still holds the session, i.e. if the gap is
  shorter than the cache's retention ``T``: ``P = 1 - exp(-T / gap)``;
- **prefixes shared across sessions** (``shared_share``): ``N`` prefixes of Zipf popularity ``p_i``. With ``lam``
  requests/s of the class at a site, prefix ``i`` is in an LRU cache of characteristic time ``T`` with probability
  ``1 - exp(-lam p_i T)`` (Che, Tung and Wang, IEEE JSAC 2002), so the shared hit rate
  ``sum_i p_i (1 - exp(-lam p_i T))`` rises with the share of the class a site serves: consolidation pays.

Retention is the cache's bytes over the bytes of new KV written per second: ``T = C / (r (n_new + n_out) b)`` for
``r`` requests/s per node at full load, ``n_new`` uncached prompt tokens, ``n_out`` answer tokens and ``b`` bytes of KV
per token. A tier (``data/serving/kv_tiers.csv``) adds capacity (HBM only; + host DRAM; + local NVMe) and a load time on
a hit (the cached tokens' KV copied back into HBM at the tier's bandwidth), which comes out of the node's TTFT budget.

The placement model sees the cache in two linear pieces. Per token, the node runs at the hit rate of a site that
sees the whole class (every shared prefix hot); per open site, the shared prefixes it misses are charged as prefill
work at its peak over every traffic level: ``max_lam lam sum_i p_i exp(-lam p_i T) = G / T`` with
``G = max_x x sum_i p_i exp(-x p_i)`` set by the popularity alone. The load is therefore never under-counted, and a
site that serves little of a class pays nearly the whole miss charge for the little it serves: the trade between
consolidation (fewer sites, each hotter) and proximity (sites near users) is in the objective.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from placement._errors import InputError, Problem
from placement._types import FloatArray
from placement._validate import Column, missing_columns, numbers, raise_if, read_table, text
from placement.world.bundled import bundled_path

KV_TIERS_CSV = bundled_path("serving", "kv_tiers.csv")
"""The bundled cache tiers."""
PREFIX_REUSE_CSV = bundled_path("serving", "prefix_reuse.csv")
"""The bundled prefix-reuse profiles."""
TIER_ORDER = ("hbm", "dram", "nvme")
"""Tiers stack in this order: each holds everything the ones before it hold, and more."""

_TIER_COLUMNS = (
    Column("tier", help="one of hbm, dram, nvme"),
    Column("adds_cache_gb_per_node", kind="number", required=False, low=0, help="GB the tier adds to a node's cache"),
    Column("load_gb_s_per_node", kind="number", required=False, low=0.001, help="GB/s a hit's KV comes back at"),
    Column("usd_per_node_h", kind="number", low=0, help="what the tier adds to a node's cost, USD/h"),
    Column("basis", help="cited or estimate"),
    Column("source", help="where the figures come from"),
)
_REUSE_COLUMNS = (
    Column("profile", help="a short profile id (chat, agent)"),
    Column("session_share", kind="number", low=0, high=1, help="share of a prompt that is the session's earlier turns"),
    Column("turn_gap_s", kind="number", low=0.001, help="mean seconds between a session's turns"),
    Column("shared_share", kind="number", low=0, high=1, help="share of a prompt that is a prefix shared across sessions"),
    Column("shared_prefixes", kind="number", low=1, high=10_000_000, whole=True, help="number of distinct shared prefixes"),
    Column("zipf_exponent", kind="number", low=0, high=3, help="Zipf exponent of the shared prefixes' popularity"),
    Column("basis", help="cited or estimate"),
    Column("source", help="where the figures come from"),
)


@dataclass(frozen=True)
class CacheTier:
    """One tier of a node's KV cache.

    Parameters
    ----------
    tier : str
        ``hbm``, ``dram`` or ``nvme``.
    adds_cache_gb_per_node : float
        Capacity the tier adds to one node's cache (0 for ``hbm``: the serving model's free HBM). [GB]
    load_gb_s_per_node : float
        Bandwidth a hit's KV comes back into HBM at (``inf``: in place). [GB/s]
    usd_per_node_h : float
        What the tier adds to a node's hourly cost. [USD/h]
    basis, source : str
        ``cited`` or ``estimate``, and where the figures come from.
    """

    tier: str
    adds_cache_gb_per_node: float
    load_gb_s_per_node: float
    usd_per_node_h: float
    basis: str = "estimate"
    source: str = ""


@dataclass(frozen=True)
class PrefixReuse:
    """Where a class's cached prompt tokens come from (see the module docstring).

    Parameters
    ----------
    profile : str
        Its id.
    session_share : float
        Share of a prompt's tokens that are the session's earlier turns.
    turn_gap_s : float
        Mean time between a session's turns. [s]
    shared_share : float
        Share of a prompt's tokens that are a prefix shared across sessions.
    shared_prefixes : int
        Number of distinct shared prefixes.
    zipf_exponent : float
        Zipf exponent of their popularity.
    basis, source : str
        ``cited`` or ``estimate``, and where the figures come from.
    """

    profile: str
    session_share: float
    turn_gap_s: float
    shared_share: float
    shared_prefixes: int
    zipf_exponent: float
    basis: str = "estimate"
    source: str = ""

    @property
    def popularity(self) -> FloatArray:
        """``(N,)`` request share of each shared prefix, most popular first (sums to 1)."""
        return _zipf(self.shared_prefixes, self.zipf_exponent)


@lru_cache(maxsize=16)
def _zipf(n: int, exponent: float) -> FloatArray:
    weight = np.arange(1, n + 1, dtype=float) ** -exponent
    return np.asarray(weight / weight.sum())


@dataclass(frozen=True)
class CacheFigures:
    """What a class's cache does on the scenario's node.

    Parameters
    ----------
    reuse : PrefixReuse
        The class's reuse profile.
    tier : str
        The tier the node keeps prefixes in.
    cache_gb_per_node : float
        Cache capacity of one node, every tier up to ``tier``. [GB]
    retention_s : float
        How long an unused prefix stays cached at full load (``T``). [s]
    hit_rate_limit : float
        Hit rate of a site that sees the whole class (every shared prefix hot): the per-token figure the node's
        goodput is computed at.
    hit_load_ms : float
        Time to bring the longest prompt's cached KV back into HBM (taken out of the node's TTFT budget). [ms]
    warmup_nodes : float
        Node-equivalents one open site spends prefilling the shared prefixes it misses, at their peak over every
        traffic level.
    requests_per_tok : float
        Requests per answer token (``1 / output_tokens``): a site's request rate from the goodput it serves.
    goodput_no_cache_tok_s_per_node : float
        The node's goodput with no prefix cache at all (hit rate 0): what the cache is worth. [tokens/s]
    """

    reuse: PrefixReuse
    tier: str
    cache_gb_per_node: float
    retention_s: float
    hit_rate_limit: float
    hit_load_ms: float
    warmup_nodes: float
    requests_per_tok: float
    goodput_no_cache_tok_s_per_node: float = 0.0

    def miss_nodes(self, tok_s: FloatArray | float) -> FloatArray:
        """Node-equivalents a site serving ``tok_s`` of the class spends prefilling the shared prefixes it misses.

        ``lam sum_i p_i exp(-lam p_i T)`` misses a second at ``lam = tok_s x requests_per_tok``, each taking
        ``warmup_nodes T / G`` node-seconds: nothing at no load, ``warmup_nodes`` where the misses peak, less again
        as a busier site keeps its prefixes hot. [nodes]
        """
        rate = np.atleast_1d(np.asarray(tok_s, dtype=float)) * self.requests_per_tok
        if self.warmup_nodes <= 0 or not np.isfinite(self.retention_s):
            return np.zeros(rate.shape)
        misses = misses_per_retention(self.reuse.popularity, rate * self.retention_s)
        return np.asarray(self.warmup_nodes * misses / miss_peak(self.reuse))

    def miss_nodes_per_tok_s(self, tok_s: FloatArray | float) -> FloatArray:
        """:meth:`miss_nodes` per tok/s served; at no load, its figure where the misses peak. [nodes/(tokens/s)]"""
        load = np.atleast_1d(np.asarray(tok_s, dtype=float))
        if self.warmup_nodes <= 0 or not np.isfinite(self.retention_s):
            return np.zeros(load.shape)
        peak_tok_s = miss_peak_load(self.reuse) / self.retention_s / self.requests_per_tok
        at = np.where(load > 0, load, peak_tok_s)
        return np.asarray(self.miss_nodes(at) / at)

    def hit_rate(self, requests_per_s: FloatArray | float) -> FloatArray:
        """Hit rate of a site serving ``requests_per_s`` of the class (0 where it serves none)."""
        rate = np.atleast_1d(np.asarray(requests_per_s, dtype=float))
        hit = hit_rate(self.reuse, rate, self.retention_s)
        return np.where(rate > 0, hit, 0.0)


def session_hit_rate(reuse: PrefixReuse, retention_s: float) -> float:
    """Share of session-history tokens still cached when the next turn arrives: ``1 - exp(-T / gap)``."""
    return float(1.0 - np.exp(-retention_s / reuse.turn_gap_s))


def shared_hit_rate(reuse: PrefixReuse, requests_per_s: FloatArray, retention_s: float) -> FloatArray:
    """Che's approximation: ``sum_i p_i (1 - exp(-lam p_i T))`` for each request rate ``lam`` of a site. [share]"""
    p = reuse.popularity
    rate = np.atleast_1d(np.asarray(requests_per_s, dtype=float))
    out = np.empty(len(rate))
    for k, lam in enumerate(rate.tolist()):
        out[k] = float(p @ (1.0 - np.exp(-lam * retention_s * p)))
    return out


def hit_rate(reuse: PrefixReuse, requests_per_s: FloatArray, retention_s: float) -> FloatArray:
    """Share of a class's prompt tokens served from the cache at a site with ``requests_per_s`` of it."""
    shared = shared_hit_rate(reuse, requests_per_s, retention_s)
    return np.asarray(reuse.session_share * session_hit_rate(reuse, retention_s) + reuse.shared_share * shared)


def hit_rate_limit(reuse: PrefixReuse, retention_s: float) -> float:
    """The hit rate as a site's request rate grows without bound (every shared prefix hot)."""
    return reuse.session_share * session_hit_rate(reuse, retention_s) + reuse.shared_share


def miss_peak(reuse: PrefixReuse) -> float:
    """``G = max_x x sum_i p_i exp(-x p_i)``: the most shared-prefix misses per retention time, over every traffic level.

    ``lam sum_i p_i exp(-lam p_i T)`` misses/s at a site peak at ``G / T``; uniform popularity over ``N`` prefixes gives
    ``N / e``, a skewed one less (the popular prefixes stay hot).
    """
    return _miss_peak(reuse.shared_prefixes, reuse.zipf_exponent)


def miss_peak_load(reuse: PrefixReuse) -> float:
    """The ``x = lam T`` at which a site's shared-prefix misses peak (:func:`miss_peak` is their value there)."""
    return _miss_peak_at(reuse.shared_prefixes, reuse.zipf_exponent)[0]


def _miss_peak(n: int, exponent: float) -> float:
    return _miss_peak_at(n, exponent)[1]


def misses_per_retention(popularity: FloatArray, x: FloatArray) -> FloatArray:
    """``x sum_i p_i exp(-x p_i)`` for each ``x = lam T``: shared-prefix misses per retention time."""
    x = np.atleast_1d(np.asarray(x, dtype=float))
    return np.asarray([float(v * (popularity @ np.exp(-v * popularity))) for v in x.tolist()])


@lru_cache(maxsize=16)
def _miss_peak_at(n: int, exponent: float) -> tuple[float, float]:
    p = _zipf(n, exponent)
    grid = np.geomspace(1e-3, 1e3 * n, 241)
    values = misses_per_retention(p, grid)
    best = int(np.argmax(values))
    fine = np.geomspace(grid[max(best - 1, 0)], grid[min(best + 1, len(grid) - 1)], 81)
    near = misses_per_retention(p, fine)
    if near.max() >= values[best]:
        return float(fine[int(np.argmax(near))]), float(near.max())
    return float(grid[best]), float(values[best])


def retention_s(cache_bytes_per_node: float, write_bytes_per_s_per_node: float) -> float:
    """How long an unused prefix stays in an LRU cache filled at the given rate. [s]"""
    if write_bytes_per_s_per_node <= 0:
        return float("inf")
    return cache_bytes_per_node / write_bytes_per_s_per_node


@lru_cache(maxsize=4)
def load_tiers(path: Path = KV_TIERS_CSV) -> dict[str, CacheTier]:
    """The tiers as ``{tier: CacheTier}``; every bad cell gathered with its row and field."""
    table = read_table(path, fix="write a CSV with a header row: " + ",".join(c.name for c in _TIER_COLUMNS), comment="#")
    problems = missing_columns(table, _TIER_COLUMNS)
    raise_if(problems)
    tier, basis, source = (text(table, _TIER_COLUMNS[i], problems) for i in (0, 4, 5))
    adds, load, cost = (numbers(table, _TIER_COLUMNS[i], problems) for i in (1, 2, 3))
    raise_if(problems)
    out: dict[str, CacheTier] = {}
    for k in range(len(table)):
        name = str(tier.iloc[k])
        if name not in TIER_ORDER:
            problems.append(table.problem(k, "tier", f"{name!r} is not a tier", f"use one of {', '.join(TIER_ORDER)}"))
            continue
        bandwidth = float(load.iloc[k])
        out[name] = CacheTier(
            name,
            0.0 if np.isnan(adds.iloc[k]) else float(adds.iloc[k]),
            float("inf") if np.isnan(bandwidth) else bandwidth,
            float(cost.iloc[k]),
            str(basis.iloc[k]),
            str(source.iloc[k]),
        )
    missing = [t for t in TIER_ORDER if t not in out]
    if missing:
        problems.append(table.problem(None, "tier", f"no row for {', '.join(missing)}", "give a row for every tier"))
    raise_if(problems)
    return out


@lru_cache(maxsize=4)
def load_reuse(path: Path = PREFIX_REUSE_CSV) -> dict[str, PrefixReuse]:
    """The reuse profiles as ``{profile: PrefixReuse}``; every bad cell gathered with its row and field."""
    table = read_table(path, fix="write a CSV with a header row: " + ",".join(c.name for c in _REUSE_COLUMNS), comment="#")
    problems = missing_columns(table, _REUSE_COLUMNS)
    raise_if(problems)
    profile, basis, source = (text(table, _REUSE_COLUMNS[i], problems) for i in (0, 6, 7))
    session, gap, shared, count, zipf = (numbers(table, _REUSE_COLUMNS[i], problems) for i in (1, 2, 3, 4, 5))
    raise_if(problems)
    out: dict[str, PrefixReuse] = {}
    for k in range(len(table)):
        if session.iloc[k] + shared.iloc[k] > 1:
            rule = f"session_share + shared_share = {session.iloc[k] + shared.iloc[k]:g} is above 1"
            problems.append(table.problem(k, "shared_share", rule, "the two shares of a prompt sum to 1 at most"))
            continue
        out[str(profile.iloc[k])] = PrefixReuse(
            str(profile.iloc[k]),
            float(session.iloc[k]),
            float(gap.iloc[k]),
            float(shared.iloc[k]),
            int(count.iloc[k]),
            float(zipf.iloc[k]),
            str(basis.iloc[k]),
            str(source.iloc[k]),
        )
    raise_if(problems)
    return out


def tier_stack(tier: str, tiers: dict[str, CacheTier]) -> list[CacheTier]:
    """The tiers a node with ``tier`` keeps prefixes in: HBM and every tier up to ``tier``."""
    return [tiers[t] for t in TIER_ORDER[: TIER_ORDER.index(tier) + 1]]


def reuse_for(name: str, *, source: str, key: str) -> PrefixReuse:
    """The reuse profile a class names, or an error at its key with the profiles there are."""
    table = load_reuse()
    if name not in table:
        fix = f"use one of: {', '.join(table)} (or add a row to {PREFIX_REUSE_CSV})"
        raise InputError([Problem(source, key, "", f"{name!r} is not a prefix-reuse profile", fix)])
    return table[name]
