"""The latency graph's data: hubs and long-haul links from CSV, checked, and the graph's parameters.

The graph (:mod:`placement.network.graph`) has one node per hub (a metro or internet-exchange city,
or a cable landing) and one edge per long-haul corridor: terrestrial fiber between neighbouring
metros, or a submarine cable system between its landings. Both are editable data:
``data/network/hubs.csv`` and ``data/network/links.csv``, read and checked here (every problem in
both files gathered and reported together).

The free parameters (route factors, hop delay, fixed delay) are fitted by
``benchmarks/calibrate_latency.py`` on part of Azure's published inter-region round trips and
written to ``data/network/calibrated.json``, which is read here as the default.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields
from functools import cached_property, lru_cache
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd
from numpy.typing import NDArray

from placement._errors import Problem
from placement._validate import Column, Table, choice, known, matches, missing_columns, numbers, raise_if, read_table, unique
from placement.world.bundled import bundled_path
from placement.world.geodesy import great_circle_km, unit_vectors

NETWORK_DIR = bundled_path("network")
"""The bundled network: ``hubs.csv``, ``links.csv`` and ``calibrated.json``."""

HUBS_CSV = NETWORK_DIR / "hubs.csv"
LINKS_CSV = NETWORK_DIR / "links.csv"
CALIBRATED_JSON = NETWORK_DIR / "calibrated.json"

HUB_KINDS = ("metro", "landing")
LINK_KINDS = ("terrestrial", "submarine")
LINK_SCOPES = ("global", "regional")
"""``scope`` column (optional; blank is ``global``). A ``regional`` link carries only traffic with an end
in a country it joins (the trans-Siberian, Central Asian and Middle Eastern land corridors carry
Russian, Kazakh, Chinese, Iraqi... traffic, while Europe <-> Asia transit goes by sea); one
provider's backbone does not use them at all."""

HUB_TABLE = (
    Column("hub_id", help="hub's id, a lower-case slug like 'new-york'"),
    Column("name", required=False, help="hub's display name"),
    Column("country_code", help="hub's ISO 3166-1 alpha-2 country code"),
    Column("lat", "number", low=-90.0, high=90.0, help="hub's latitude [degrees]"),
    Column("lon", "number", low=-180.0, high=180.0, help="hub's longitude [degrees]"),
    Column("kind", help=f"hub's kind: {', '.join(HUB_KINDS)}"),
)
"""The columns of ``hubs.csv`` and their rules."""
LINK_TABLE = (
    Column("a", help="hub id of one end"),
    Column("b", help="hub id of the other end"),
    Column("kind", help=f"link's kind: {', '.join(LINK_KINDS)}"),
    Column("length_km", "number", required=False, low=1e-9, high=50_000.0, help="published route length [km], or blank"),
    Column("cables", required=False, help="cable systems of a submarine link"),
    Column("source", required=False, help="source of the link"),
    Column("scope", required=False, help="link's scope: regional, or blank", may_be_absent=True),
)
"""The columns of ``links.csv`` and their rules (``scope`` may be left out: every link is then global)."""
HUB_COLUMNS = tuple(c.name for c in HUB_TABLE)
LINK_COLUMNS = tuple(c.name for c in LINK_TABLE if not c.may_be_absent)
_HUB = {c.name: c for c in HUB_TABLE}
_LINK = {c.name: c for c in LINK_TABLE}

_HUB_ID = r"[a-z0-9]+(?:-[a-z0-9]+)*"


@dataclass(frozen=True)
class GraphLatencyParams:
    """Free parameters of the graph latency model.

    Parameters
    ----------
    route_factor_terrestrial : float
        Fiber route length over great circle for terrestrial corridors without a published
        length (>= 1).
    route_factor_submarine : float
        The same for submarine corridors without a published length (>= 1).
    hop_ms : float
        Round-trip equipment delay added per edge (regeneration, routers at each hub). [ms]
    fixed_ms : float
        Round-trip delay added once per path (data-center edge and metro fabric). [ms]
    access_route_factor : float
        Route length over great circle for the leg from a point to its nearest hub (>= 1).
    last_mile_ms : float
        Round trip of a user's last mile (home or mobile network to the metro), added once per
        user end when the access leg is requested. [ms]
    firewall_ms : float
        Round trip added to every link that crosses the border of a country in
        :data:`placement.network.graph.FIREWALL_COUNTRIES` (inspection at the national gateways); 0 on a provider's backbone. [ms]
    """

    route_factor_terrestrial: float = 1.5
    route_factor_submarine: float = 1.15
    hop_ms: float = 0.5
    fixed_ms: float = 1.0
    access_route_factor: float = 1.5
    last_mile_ms: float = 8.0
    firewall_ms: float = 0.0

    def __post_init__(self) -> None:
        """Refuse factors below 1 and negative delays: either would beat light in fiber."""
        for name in ("route_factor_terrestrial", "route_factor_submarine", "access_route_factor"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 1.0):
                raise ValueError(f"{name} must be a finite number >= 1, got {value}")
        for name in ("hop_ms", "fixed_ms", "last_mile_ms", "firewall_ms"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0.0):
                raise ValueError(f"{name} must be a finite number >= 0, got {value}")

    def route_factor(self, kind: str) -> float:
        """Route factor of an edge kind (``terrestrial`` or ``submarine``)."""
        return self.route_factor_submarine if kind == "submarine" else self.route_factor_terrestrial


@dataclass(frozen=True, eq=False)
class Network:
    """Hubs and long-haul links, checked.

    Parameters
    ----------
    hubs : pandas.DataFrame
        Columns ``hub_id, name, country_code, lat, lon, kind``; row order is the hub index.
    links : pandas.DataFrame
        Columns ``a, b, kind, length_km`` (NaN where not published), ``cables, source`` and
        ``great_circle_km``.
    """

    hubs: pd.DataFrame
    links: pd.DataFrame

    @cached_property
    def hub_ids(self) -> list[str]:
        """Hub ids in index order."""
        return [str(h) for h in self.hubs["hub_id"]]

    @cached_property
    def hub_names(self) -> list[str]:
        """Hub display names in index order."""
        return [str(h) for h in self.hubs["name"]]

    @cached_property
    def hub_vectors(self) -> NDArray[np.float64]:
        """Hubs as ``(h, 3)`` unit vectors (nearest hub = largest dot product)."""
        return unit_vectors(self.hubs["lat"].to_numpy(float), self.hubs["lon"].to_numpy(float))


# ----------------------------------------------------------------------------- parameters


def load_params(path: str | Path) -> GraphLatencyParams:
    """Read fitted parameters from a calibration file.

    Parameters
    ----------
    path : str or Path
        JSON with a ``params`` object keyed by :class:`GraphLatencyParams` field names.

    Returns
    -------
    GraphLatencyParams
        The parameters; fields missing from the file keep their defaults.
    """
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    known = {f.name for f in fields(GraphLatencyParams)}
    values = {k: float(v) for k, v in data.get("params", {}).items() if k in known}
    return GraphLatencyParams(**values)


@lru_cache(maxsize=1)
def default_params() -> GraphLatencyParams:
    """The calibrated parameters bundled in ``data/network/calibrated.json`` (defaults if absent)."""
    return load_params(CALIBRATED_JSON) if CALIBRATED_JSON.exists() else GraphLatencyParams()


def params_dict(params: GraphLatencyParams) -> dict[str, float]:
    """Parameters as a plain dict (for JSON)."""
    return {k: float(v) for k, v in asdict(params).items()}


# ----------------------------------------------------------------------------- loading


def _check_hubs(table: Table, problems: list[Problem]) -> pd.DataFrame:
    slug = matches(table, "hub_id", _HUB_ID, problems, what="a lower-case slug like 'new-york'", fix="rename the hub")
    unique(table, "hub_id", problems, what="hub id", fix="give every hub a unique id", rows=slug)
    choice(table, "kind", HUB_KINDS, problems, fix="fix the kind")
    matches(table, "country_code", "[A-Z]{2}", problems, what="an ISO 3166-1 alpha-2 code", fix="write e.g. US, DE")
    lat, lon = numbers(table, _HUB["lat"], problems), numbers(table, _HUB["lon"], problems)
    return table.cells.assign(lat=lat, lon=lon)[list(HUB_COLUMNS)]


def _check_link_ends(table: Table, hubs: pd.DataFrame, problems: list[Problem]) -> NDArray[np.bool_]:
    """Flag unknown hub ids, self-loops, bad kinds and duplicate (pair, kind); return rows whose ends are known."""
    hub_ids = set(hubs["hub_id"])
    fix = "add it to hubs.csv or correct the spelling"
    end_a, end_b = (known(table, end, hub_ids, problems, what="hub id", fix=fix) for end in ("a", "b"))
    ok = end_a & end_b
    choice(table, "kind", LINK_KINDS, problems, fix="fix the kind")
    seen: dict[tuple[frozenset[str], str], int] = {}
    for k, (a, b, kind) in enumerate(zip(table.column("a"), table.column("b"), table.column("kind"), strict=True)):
        if a == b and a:
            ok[k] = False
            problems.append(table.problem(k, "b", f"link joins {a!r} to itself", "remove the row"))
        pair = (frozenset((a, b)), kind)
        if pair in seen:
            ok[k] = False
            problems.append(
                table.problem(
                    k,
                    "",
                    f"duplicate {kind} link {a}–{b} (first at {table.where(seen[pair])})",
                    "keep one row per pair of hubs and kind; list every cable system in its cables column",
                )
            )
        else:
            seen[pair] = k
    return ok


def _scopes(table: Table, problems: list[Problem]) -> pd.Series:
    """The optional ``scope`` column, blanks as ``global``; any other value is a problem."""
    fix = "write regional for a corridor that carries only its own countries' traffic, else leave it blank"
    return choice(table, "scope", LINK_SCOPES, problems, fix=fix, blank="global", fold_case=True)


def _check_lengths(links: pd.DataFrame, table: Table, problems: list[Problem]) -> None:
    short = (links["length_km"] < links["great_circle_km"] - 1e-6).to_numpy()
    for k in np.flatnonzero(short).tolist():
        problems.append(
            table.problem(
                k,
                "length_km",
                f"{table.column('length_km').iloc[k]} km is shorter than the great circle between {links['a'].iloc[k]} and "
                f"{links['b'].iloc[k]} ({links['great_circle_km'].iloc[k]:.0f} km)",
                "give the published route length, or leave it blank to use the great circle times the route factor",
            )
        )


def _check_connected(hubs: pd.DataFrame, links: pd.DataFrame, table: Table, problems: list[Problem]) -> None:
    graph = nx.Graph()
    graph.add_nodes_from(hubs["hub_id"])
    graph.add_edges_from(zip(links["a"], links["b"], strict=True))
    components = sorted(nx.connected_components(graph), key=len, reverse=True)
    index = {h: k for k, h in enumerate(hubs["hub_id"])}
    for component in components[1:]:
        for hub in sorted(component):
            problems.append(
                table.problem(
                    index[hub],
                    "hub_id",
                    f"hub {hub!r} is not connected to the rest of the network",
                    "add a link from it to a neighbouring hub in links.csv",
                )
            )


def load_network(hubs_path: str | Path, links_path: str | Path) -> Network:
    """Read and check the hubs and links of a latency graph.

    Parameters
    ----------
    hubs_path : str or Path
        CSV ``hub_id,name,country_code,lat,lon,kind`` (:data:`HUBS_CSV` is the bundled one).
    links_path : str or Path
        CSV ``a,b,kind,length_km,cables,source``; ``length_km`` blank means great circle times the
        route factor of the link's kind.

    Returns
    -------
    Network
        The checked hubs and links.

    Raises
    ------
    InputError
        Every problem in both files together (file, row, field, rule, fix): unknown hub ids,
        duplicate hubs or links, bad numbers, lengths below the great circle, disconnected hubs.
    """
    fix = "save it as UTF-8 CSV with a header row"
    hub_table, link_table = read_table(hubs_path, fix=fix), read_table(links_path, fix=fix)
    problems = missing_columns(hub_table, HUB_TABLE) + missing_columns(link_table, LINK_TABLE)
    raise_if(problems)
    hubs = _check_hubs(hub_table, problems).reset_index(drop=True)
    ok = _check_link_ends(link_table, hubs, problems)
    length = numbers(link_table, _LINK["length_km"], problems)
    scope = _scopes(link_table, problems)
    links = link_table.cells[list(LINK_COLUMNS)].assign(length_km=length, scope=scope)
    position = {h: k for k, h in enumerate(hubs["hub_id"])}
    ia = links["a"].map(position).fillna(0).astype(int).to_numpy()
    ib = links["b"].map(position).fillna(0).astype(int).to_numpy()
    lat, lon = hubs["lat"].to_numpy(float), hubs["lon"].to_numpy(float)
    links["great_circle_km"] = np.where(ok, great_circle_km(lat[ia], lon[ia], lat[ib], lon[ib]), np.nan)
    _check_lengths(links, link_table, problems)
    if not problems:
        _check_connected(hubs, links, hub_table, problems)
    if not problems:  # transit between other countries may not use regional links: it must still reach every hub
        _check_connected(hubs, links[links["scope"].ne("regional")], hub_table, problems)
    raise_if(problems)
    return Network(hubs=hubs, links=links.reset_index(drop=True))


def regional_links(network: Network) -> NDArray[np.bool_]:
    """True for every link whose ``scope`` is ``regional``."""
    if "scope" not in network.links.columns:
        return np.zeros(len(network.links), dtype=bool)
    return np.asarray(network.links["scope"].eq("regional").to_numpy())


@lru_cache(maxsize=8)
def global_network(network: Network) -> Network:
    """The network without its regional links (what transit between other countries, and a backbone, may use).

    Parameters
    ----------
    network : Network
        Hubs and links.

    Returns
    -------
    Network
        ``network`` itself when it has no regional link, else a copy without them.
    """
    regional = regional_links(network)
    if not regional.any():
        return network
    return Network(hubs=network.hubs, links=network.links[~regional].reset_index(drop=True))


def corridor_countries(network: Network) -> frozenset[str]:
    """Countries at either end of a regional link: the traffic the regional links may carry."""
    links = network.links[regional_links(network)]
    country = network.hubs.set_index("hub_id")["country_code"]
    return frozenset(country.loc[links["a"]].tolist() + country.loc[links["b"]].tolist())


@lru_cache(maxsize=1)
def default_network() -> Network:
    """The bundled network (``data/network/hubs.csv`` and ``links.csv``), loaded once."""
    return load_network(HUBS_CSV, LINKS_CSV)
