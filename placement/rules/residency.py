"""Data residency: which sites may serve which populations, by country, and which share of their demand.

Two ways to say it. ``residency.rules`` and ``domestic_only_sites`` are whole-country rules (populations of
P only at sites in S; sites in D only for their own country). ``residency.regimes`` picks entries of a
cited table (``data/rules/residency_regimes.csv``): per country or bloc, the share of each class's demand
that must be served at in-bloc sites, which sites count as in-bloc, and whether those sites may serve
outsiders. A share strictly between 0 and 1 splits each member population's commodity of that class in
two: a regulated part (``share`` of its demand, in-bloc sites only) and a free part (the rest, any site
the other rules allow). Share 1 restricts the whole commodity; share 0 leaves it as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from placement._errors import Problem
from placement._validate import Column, flags, missing_columns, raise_if, read_table, require_rows, text
from placement.scenario.load import LoadedScenario
from placement.scenario.sections import RegimeChoice, ResidencySection
from placement.world.bundled import bundled_path
from placement.world.regions import country_table

REGIMES_CSV = bundled_path("rules", "residency_regimes.csv")
"""The bundled regimes (cited, each marked as a simplification; ``data/SOURCES.md``)."""
FREE = -1
"""``commodity_regime`` of a commodity no regime restricts."""

_COLUMNS = (
    Column("regime_id", help="a short unique id"),
    Column("name", help="what the regime is"),
    Column("members", help="ISO alpha-2 codes, space-separated"),
    Column("sites", required=False, help="ISO alpha-2 codes of in-bloc sites (blank: the members)"),
    Column("share", help="*=S or class=S pairs, space-separated"),
    Column("serve_outsiders", kind="bool", required=False, help="true or false"),
    Column("simplification", help="what the row simplifies"),
    Column("source", help="the legal text"),
)


@dataclass(frozen=True)
class Regime:
    """One residency regime, its shares resolved for a scenario's classes.

    Parameters
    ----------
    regime_id, name : str
        Its id and what it is.
    members : frozenset of str
        ISO alpha-2 codes of the populations it covers.
    sites : frozenset of str
        Codes whose sites count as in-bloc.
    share_by_class : tuple of float
        Share of each class's demand (scenario order) that must be served in-bloc, in [0, 1].
    serve_outsiders : bool
        Whether in-bloc sites may serve populations outside ``members``.
    simplification, source : str
        What the row simplifies, and the legal text.
    share_from : str
        ``"table"`` or ``"scenario"``: where the shares were written.
    """

    regime_id: str
    name: str
    members: frozenset[str]
    sites: frozenset[str]
    share_by_class: tuple[float, ...]
    serve_outsiders: bool
    simplification: str
    source: str
    share_from: str = "table"


@dataclass(frozen=True)
class _Row:
    regime_id: str
    name: str
    members: frozenset[str]
    sites: frozenset[str]
    share: dict[str, float]
    serve_outsiders: bool
    simplification: str
    source: str
    where: str


def _parse_share(cell: str) -> dict[str, float] | str:
    """``"*=1"`` or ``"chat=0.3 agent=0.5"`` as a dict, or what is wrong with it."""
    out: dict[str, float] = {}
    for item in cell.split():
        name, _, value = item.partition("=")
        try:
            out[name] = float(value)
        except ValueError:
            return f"{item!r} is not class=share"
        if not name:
            return f"{item!r} names no class"
    return out if out else "no share given"


def load_regime_table(path: str | Path = REGIMES_CSV) -> dict[str, _Row]:
    """Read and check a regimes table: every bad cell gathered (unknown country, share outside [0, 1], repeated id)."""
    table = read_table(path, fix="write a CSV with a header row: " + ",".join(c.name for c in _COLUMNS), comment="#")
    problems = missing_columns(table, _COLUMNS)
    raise_if(problems)
    require_rows(table, "give one row per regime")
    for column in ("regime_id", "name", "members", "share", "simplification", "source"):
        text(table, next(c for c in _COLUMNS if c.name == column), problems)
    outsiders = flags(table, next(c for c in _COLUMNS if c.name == "serve_outsiders"), problems)
    codes = set(country_table().index)
    rows: dict[str, _Row] = {}
    for k in range(len(table)):
        cell = {c.name: str(table.column(c.name).iloc[k]) for c in _COLUMNS}
        if cell["regime_id"] in rows:
            problems.append(table.problem(k, "regime_id", f"{cell['regime_id']!r} repeats", "give each regime its own id"))
        members = frozenset(cell["members"].split())
        sites = frozenset(cell["sites"].split()) or members
        for field, named in (("members", members), ("sites", sites)):
            for code in sorted(named - codes):
                problems.append(table.problem(k, field, f"unknown country code {code!r}", "use ISO alpha-2 codes (GeoNames)"))
        share = _parse_share(cell["share"])
        if isinstance(share, str):
            problems.append(table.problem(k, "share", share, "write *=S or class=S pairs, S between 0 and 1"))
            share = {}
        for name, value in share.items():
            if not 0.0 <= value <= 1.0:
                problems.append(table.problem(k, "share", f"{name}={value:g} is outside [0, 1]", "give a share between 0 and 1"))
        rows.setdefault(
            cell["regime_id"],
            _Row(
                cell["regime_id"],
                cell["name"],
                members,
                sites,
                share,
                bool(outsiders.iloc[k]),
                cell["simplification"],
                cell["source"],
                table.where(k),
            ),
        )
    raise_if(problems)
    return rows


def scenario_regimes(loaded: LoadedScenario) -> list[Regime]:
    """The regimes a scenario picks (``residency.regimes``), shares resolved for its classes.

    Raises
    ------
    InputError
        Every problem gathered: an unknown regime id or class name, a share outside [0, 1], a class the
        table gives no share for, two regimes covering one country (overlapping blocs).
    """
    section = loaded.scenario.residency
    path = loaded.resolve(section.regimes_file) if section.regimes_file is not None else REGIMES_CSV
    if not section.regimes:
        if section.regimes_file is not None:
            load_regime_table(path)  # a file the scenario names is checked even before a regime is picked from it
        return []
    table = load_regime_table(path)
    classes = [c.name for c in loaded.scenario.classes]
    source = str(loaded.path)
    problems: list[Problem] = []
    regimes: list[Regime] = []
    owner: dict[str, str] = {}
    for k, entry in enumerate(section.regimes):
        choice = entry if isinstance(entry, RegimeChoice) else RegimeChoice(id=entry)
        field = f"residency.regimes[{k}]"
        row = table.get(choice.id)
        if row is None:
            problems.append(Problem(source, field, "id", f"unknown regime {choice.id!r}", f"use one of {sorted(table)} ({path})"))
            continue
        written = (
            row.share
            if choice.share is None
            else ({"*": choice.share} if isinstance(choice.share, float | int) else choice.share)
        )
        for name in sorted(set(written) - {"*", *classes}):
            where = row.where if choice.share is None else field
            problems.append(
                Problem(
                    str(path) if choice.share is None else source,
                    where,
                    "share",
                    f"unknown class {name!r}",
                    f"use * or one of {classes}",
                )
            )
        shares = []
        for name in classes:
            value = written.get(name, written.get("*"))
            if value is None:
                problems.append(Problem(source, field, "share", f"no share for class {name!r}", f"give {name}=S or *=S"))
                value = 0.0
            if not 0.0 <= float(value) <= 1.0:
                problems.append(
                    Problem(source, field, "share", f"{name}: {value:g} is outside [0, 1]", "give a share between 0 and 1")
                )
            shares.append(float(value))
        for code in sorted(row.members):
            if code in owner:
                rule = f"{code} is a member of both {owner[code]!r} and {choice.id!r} (overlapping blocs)"
                problems.append(Problem(source, field, "id", rule, "pick one regime per country"))
            owner.setdefault(code, choice.id)
        outsiders = row.serve_outsiders if choice.serve_outsiders is None else choice.serve_outsiders
        regimes.append(
            Regime(
                row.regime_id,
                row.name,
                row.members,
                row.sites,
                tuple(shares),
                outsiders,
                row.simplification,
                row.source,
                "table" if choice.share is None else "scenario",
            )
        )
    raise_if(problems)
    return regimes


@dataclass(frozen=True)
class CommoditySplit:
    """Commodities after the regimes split them: population, class, regime and share of the (population, class) demand.

    Parameters
    ----------
    population, workload : numpy.ndarray of int
        ``(c,)`` population and class index of each commodity.
    regime : numpy.ndarray of int
        ``(c,)`` index into the regimes of the regulated part, :data:`FREE` for the rest.
    demand_factor : numpy.ndarray
        ``(c,)`` share of its (population, class) demand the commodity carries.
    """

    population: NDArray[np.int64]
    workload: NDArray[np.int64]
    regime: NDArray[np.int64]
    demand_factor: NDArray[np.float64]


def split_commodities(
    population_country: NDArray[np.str_], population: NDArray[np.int64], workload: NDArray[np.int64], regimes: list[Regime]
) -> CommoditySplit:
    """Split each member's commodity whose class has a share strictly inside (0, 1); restrict it whole at share 1.

    The commodities given keep their order (the free part, or the whole commodity); each regulated part of
    a split is appended after them, so a scenario without split shares keeps its layout exactly.

    Parameters
    ----------
    population_country : numpy.ndarray of str
        ``(n,)`` ISO alpha-2 code of each population.
    population, workload : numpy.ndarray of int
        ``(c,)`` population and class of each commodity (:func:`placement.instance.build.commodities`).
    regimes : list of Regime
        The scenario's regimes (:func:`scenario_regimes`).

    Returns
    -------
    CommoditySplit
        The commodities after the split.
    """
    regime = np.full(len(population), FREE, dtype=np.int64)
    factor = np.ones(len(population))
    extra_population, extra_workload, extra_regime, extra_factor = [], [], [], []
    country = np.asarray(population_country, dtype=str)[population]
    for r, entry in enumerate(regimes):
        member = np.isin(country, sorted(entry.members))
        share = np.asarray(entry.share_by_class, dtype=float)[workload]
        whole = member & (share >= 1.0)
        regime[whole] = r
        split = np.flatnonzero(member & (share > 0.0) & (share < 1.0))
        factor[split] = 1.0 - share[split]
        extra_population.append(population[split])
        extra_workload.append(workload[split])
        extra_regime.append(np.full(len(split), r, dtype=np.int64))
        extra_factor.append(share[split])
    return CommoditySplit(
        np.concatenate([population, *extra_population]).astype(np.int64),
        np.concatenate([workload, *extra_workload]).astype(np.int64),
        np.concatenate([regime, *extra_regime]).astype(np.int64),
        np.concatenate([factor, *extra_factor]),
    )


def regime_mask(
    population_country: NDArray[np.str_],
    site_country: NDArray[np.str_],
    split: CommoditySplit,
    regimes: list[Regime],
) -> NDArray[np.bool_]:
    """``(c, m)`` commodity-site pairs the regimes permit.

    A regulated part is served only at its regime's in-bloc sites; a regime whose sites may not serve
    outsiders keeps them from every commodity of a population outside its members.
    """
    country = np.asarray(population_country, dtype=str)[split.population]
    sites = np.asarray(site_country, dtype=str)
    allowed = np.ones((len(split.population), len(sites)), dtype=bool)
    for r, entry in enumerate(regimes):
        in_bloc = np.isin(sites, sorted(entry.sites))
        allowed[(split.regime == r)[:, None] & ~in_bloc[None, :]] = False
        if not entry.serve_outsiders:
            outsider = ~np.isin(country, sorted(entry.members))
            allowed[outsider[:, None] & in_bloc[None, :]] = False
    return allowed


def expand_codes(codes: list[str], groups: dict[str, list[str]]) -> set[str]:
    """Country codes named directly or through groups.

    Parameters
    ----------
    codes : list of str
        ISO alpha-2 codes or group names.
    groups : dict
        Named groups of codes.

    Returns
    -------
    set of str
        ISO alpha-2 codes.
    """
    out: set[str] = set()
    for code in codes:
        out |= set(groups.get(code, [code]))
    return out


def residency_mask(
    population_country: NDArray[np.str_] | list[str],
    site_country: NDArray[np.str_] | list[str],
    residency: ResidencySection,
) -> NDArray[np.bool_]:
    """Pairs that residency rules permit.

    A rule ``{populations: P, sites: S}`` lets populations in P be served only by sites in S;
    ``domestic_only_sites: D`` lets sites in D serve only populations of their own country.

    Parameters
    ----------
    population_country : array_like of str
        ``(n,)`` ISO alpha-2 code of each population.
    site_country : array_like of str
        ``(m,)`` ISO alpha-2 code of each site.
    residency : ResidencySection
        The rules.

    Returns
    -------
    numpy.ndarray of bool
        ``(n, m)`` permitted pairs.
    """
    pops = np.asarray(population_country, dtype=str)
    sites = np.asarray(site_country, dtype=str)
    allowed = np.ones((len(pops), len(sites)), dtype=bool)
    for rule in residency.rules:
        rule_pops = np.isin(pops, sorted(expand_codes(rule.populations, residency.groups)))
        rule_sites = np.isin(sites, sorted(expand_codes(rule.sites, residency.groups)))
        allowed[rule_pops[:, None] & ~rule_sites[None, :]] = False
    domestic = np.isin(sites, sorted(expand_codes(residency.domestic_only_sites, residency.groups)))
    allowed &= ~domestic[None, :] | (pops[:, None] == sites[None, :])
    return allowed
