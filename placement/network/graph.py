"""Round-trip time over a graph of metros and long-haul fiber corridors.

The graph (NetworkX) has one node per hub (a metro or internet-exchange city, or a cable landing)
and one edge per long-haul corridor: terrestrial fiber between neighbouring metros, or a submarine
cable system between its landings. Both are editable data: ``data/network/hubs.csv`` and
``data/network/links.csv``. An edge's round trip is its fiber length at the speed of light in
fiber, both ways, plus a per-hop equipment delay; its length is the published route length where
one is known, else the great circle times a route factor of its kind. Because every edge is at
least as long as the great circle between its ends, every path is too (triangle inequality), so
no round trip can beat :func:`placement.network.great_circle.physics_bound_rtt_ms`; the bound is also
enforced with ``np.maximum``.

A point (a user population, a data center) reaches the graph at its nearest hub over an access
leg: great circle times an access route factor, plus a last-mile constant for users only.

The free parameters (route factors, hop delay, fixed delay) are fitted by
``benchmarks/calibrate_latency.py`` on part of Azure's published inter-region round trips and
written to ``data/network/calibrated.json``, which is read here as the default.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from dataclasses import asdict, dataclass, fields
from functools import cached_property, lru_cache
from pathlib import Path
from typing import NamedTuple

import geopandas as gpd
import networkx as nx
import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from shapely import LineString, Point

from placement._errors import InputError, Problem
from placement.bundled import bundled_path
from placement.geodesy import great_circle_km, pairwise_km, unit_vectors
from placement.network.great_circle import physics_bound_rtt_ms

NETWORK_DIR = bundled_path("network")
"""The bundled network: ``hubs.csv``, ``links.csv`` and ``calibrated.json``."""

HUBS_CSV = NETWORK_DIR / "hubs.csv"
LINKS_CSV = NETWORK_DIR / "links.csv"
CALIBRATED_JSON = NETWORK_DIR / "calibrated.json"

HUB_COLUMNS = ("hub_id", "name", "country_code", "lat", "lon", "kind")
LINK_COLUMNS = ("a", "b", "kind", "length_km", "cables", "source")
HUB_KINDS = ("metro", "landing")
LINK_KINDS = ("terrestrial", "submarine")
LINK_SCOPES = ("global", "regional")
"""``scope`` column (optional; blank is ``global``). A ``regional`` link carries only traffic with an end
in a country it joins (the trans-Siberian, Central Asian and Middle Eastern land corridors carry
Russian, Kazakh, Chinese, Iraqi... traffic, while Europe <-> Asia transit goes by sea); one
provider's backbone does not use them at all."""
WGS84 = "EPSG:4326"

_HUB_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_BLANK = {"", "nan", "na", "null", "none"}
FIREWALL_COUNTRIES = ("CN",)
"""Countries whose international traffic crosses a national firewall (mainland China; Hong Kong is not)."""
ACCESS_HUBS = 3
"""A point may enter the graph at any of this many nearest hubs."""
_CHUNK_ROWS = 8192
"""Points matched to hubs per block (bounds the ``points x hubs`` scratch matrix)."""


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
        :data:`FIREWALL_COUNTRIES` (inspection at the national gateways); 0 on a provider's backbone. [ms]
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


class PointToPoint(NamedTuple):
    """A round trip between two points over the graph.

    Parameters
    ----------
    rtt_ms : float
        Modelled round trip. [ms]
    path : list of str
        Hub names along the path, first hub to last.
    bound_ms : float
        Physics bound over the great circle between the two points. [ms]
    """

    rtt_ms: float
    path: list[str]
    bound_ms: float


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


def _where(k: int) -> str:
    return f"row {k + 1} (line {k + 2})"


def _read_table(path: Path, columns: tuple[str, ...], problems: list[Problem]) -> pd.DataFrame:
    read = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8").fillna("")
    raw = pd.DataFrame({column: read[column].str.strip() for column in read.columns})
    problems.extend(
        Problem(str(path), "header", c, "required column is missing", f"give the columns {', '.join(columns)}")
        for c in columns
        if c not in raw.columns
    )
    return raw


def _numbers(text: pd.Series, path: Path, column: str, low: float, high: float, problems: list[Problem]) -> pd.Series:
    """Parse a numeric column; blanks become NaN, bad or out-of-range values are problems."""
    blank = text.str.lower().isin(_BLANK)
    values = pd.to_numeric(text.where(~blank), errors="coerce").astype(float)
    bad = ~blank & ~(values.between(low, high) & np.isfinite(values))
    for k in np.flatnonzero(bad.to_numpy()).tolist():
        problems.append(
            Problem(
                str(path),
                _where(k),
                column,
                f"must be a finite number between {low:g} and {high:g}, got {text.iloc[k]!r}",
                f"write {column} as a plain number",
            )
        )
    return values.where(~bad)


def _check_hubs(raw: pd.DataFrame, path: Path, problems: list[Problem]) -> pd.DataFrame:
    lat = _numbers(raw["lat"], path, "lat", -90.0, 90.0, problems)
    lon = _numbers(raw["lon"], path, "lon", -180.0, 180.0, problems)
    seen: dict[str, int] = {}
    for k, (hub_id, kind, country, written_lat, written_lon) in enumerate(
        zip(raw["hub_id"], raw["kind"], raw["country_code"], raw["lat"], raw["lon"], strict=True)
    ):
        where = _where(k)
        if not _HUB_ID.match(hub_id):
            problems.append(
                Problem(
                    str(path), where, "hub_id", f"must be a lower-case slug like 'new-york', got {hub_id!r}", "rename the hub"
                )
            )
        elif hub_id in seen:
            problems.append(
                Problem(
                    str(path),
                    where,
                    "hub_id",
                    f"duplicate hub id {hub_id!r} (first at {_where(seen[hub_id])})",
                    "give every hub a unique id",
                )
            )
        else:
            seen[hub_id] = k
        if kind not in HUB_KINDS:
            problems.append(
                Problem(str(path), where, "kind", f"must be one of {', '.join(HUB_KINDS)}, got {kind!r}", "fix the kind")
            )
        if not re.fullmatch(r"[A-Z]{2}", country):
            problems.append(
                Problem(
                    str(path), where, "country_code", f"must be an ISO 3166-1 alpha-2 code, got {country!r}", "write e.g. US, DE"
                )
            )
        for column, written in (("lat", written_lat), ("lon", written_lon)):
            if written.lower() in _BLANK:
                problems.append(Problem(str(path), where, column, "is missing", f"give the hub's {column} in degrees"))
    return raw.assign(lat=lat, lon=lon)[list(HUB_COLUMNS)]


def _check_link_ends(raw: pd.DataFrame, hubs: pd.DataFrame, path: Path, problems: list[Problem]) -> NDArray[np.bool_]:
    """Flag unknown hub ids, self-loops, bad kinds and duplicate (pair, kind); return rows whose ends are known."""
    known = set(hubs["hub_id"])
    seen: dict[tuple[frozenset[str], str], int] = {}
    ok = np.ones(len(raw), dtype=bool)
    for k, (a, b, kind) in enumerate(zip(raw["a"], raw["b"], raw["kind"], strict=True)):
        where = _where(k)
        for column, hub in (("a", a), ("b", b)):
            if hub not in known:
                ok[k] = False
                close = _close_ids(hub, known)
                problems.append(
                    Problem(
                        str(path), where, column, f"unknown hub id {hub!r}", f"add it to hubs.csv or correct the spelling{close}"
                    )
                )
        if a == b and a:
            ok[k] = False
            problems.append(Problem(str(path), where, "b", f"link joins {a!r} to itself", "remove the row"))
        if kind not in LINK_KINDS:
            problems.append(
                Problem(str(path), where, "kind", f"must be one of {', '.join(LINK_KINDS)}, got {kind!r}", "fix the kind")
            )
        pair = (frozenset((a, b)), kind)
        if pair in seen:
            ok[k] = False
            problems.append(
                Problem(
                    str(path),
                    where,
                    "",
                    f"duplicate {kind} link {a}–{b} (first at {_where(seen[pair])})",
                    "keep one row per pair of hubs and kind; list every cable system in its cables column",
                )
            )
        else:
            seen[pair] = k
    return ok


def _scopes(raw: pd.DataFrame, path: Path, problems: list[Problem]) -> pd.Series:
    """The optional ``scope`` column, blanks as ``global``; any other value is a problem."""
    if "scope" not in raw.columns:
        return pd.Series("global", index=raw.index)
    scope = raw["scope"].str.lower().replace("", "global")
    for k in np.flatnonzero(~scope.isin(LINK_SCOPES).to_numpy()).tolist():
        problems.append(
            Problem(
                str(path),
                _where(k),
                "scope",
                f"must be one of {', '.join(LINK_SCOPES)} or blank, got {raw['scope'].iloc[k]!r}",
                "write regional for a corridor that carries only its own countries' traffic, else leave it blank",
            )
        )
    return scope


def _close_ids(text: str, known: set[str]) -> str:
    close = difflib.get_close_matches(text, sorted(known), n=3, cutoff=0.6)
    return f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""


def _check_lengths(links: pd.DataFrame, raw_length: pd.Series, path: Path, problems: list[Problem]) -> None:
    short = (links["length_km"] < links["great_circle_km"] - 1e-6).to_numpy()
    for k in np.flatnonzero(short).tolist():
        problems.append(
            Problem(
                str(path),
                _where(k),
                "length_km",
                f"{raw_length.iloc[k]} km is shorter than the great circle between {links['a'].iloc[k]} and "
                f"{links['b'].iloc[k]} ({links['great_circle_km'].iloc[k]:.0f} km)",
                "give the published route length, or leave it blank to use the great circle times the route factor",
            )
        )


def _check_connected(hubs: pd.DataFrame, links: pd.DataFrame, path: Path, problems: list[Problem]) -> None:
    graph = nx.Graph()
    graph.add_nodes_from(hubs["hub_id"])
    graph.add_edges_from(zip(links["a"], links["b"], strict=True))
    components = sorted(nx.connected_components(graph), key=len, reverse=True)
    index = {h: k for k, h in enumerate(hubs["hub_id"])}
    for component in components[1:]:
        for hub in sorted(component):
            problems.append(
                Problem(
                    str(path),
                    _where(index[hub]),
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
    hubs_path, links_path = Path(hubs_path), Path(links_path)
    problems: list[Problem] = []
    raw_hubs = _read_table(hubs_path, HUB_COLUMNS, problems)
    raw_links = _read_table(links_path, LINK_COLUMNS, problems)
    if problems:
        raise InputError(problems)
    hubs = _check_hubs(raw_hubs, hubs_path, problems).reset_index(drop=True)
    ok = _check_link_ends(raw_links, hubs, links_path, problems)
    length = _numbers(raw_links["length_km"], links_path, "length_km", 1e-9, 50_000.0, problems)
    scope = _scopes(raw_links, links_path, problems)
    links = raw_links[list(LINK_COLUMNS)].assign(length_km=length, scope=scope)
    position = {h: k for k, h in enumerate(hubs["hub_id"])}
    ia = links["a"].map(position).fillna(0).astype(int).to_numpy()
    ib = links["b"].map(position).fillna(0).astype(int).to_numpy()
    lat, lon = hubs["lat"].to_numpy(float), hubs["lon"].to_numpy(float)
    links["great_circle_km"] = np.where(ok, great_circle_km(lat[ia], lon[ia], lat[ib], lon[ib]), np.nan)
    _check_lengths(links, raw_links["length_km"], links_path, problems)
    if not problems:
        _check_connected(hubs, links, hubs_path, problems)
    if not problems:  # transit between other countries may not use regional links: it must still reach every hub
        _check_connected(hubs, links[links["scope"].ne("regional")], hubs_path, problems)
    if problems:
        raise InputError(problems)
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


# ----------------------------------------------------------------------------- graph


def fiber_rtt_ms(length_km: ArrayLike) -> NDArray[np.float64]:
    """Round trip over a fiber route of a given length, both ways at the speed of light in fiber.

    Parameters
    ----------
    length_km : array_like
        Route length. [km]

    Returns
    -------
    numpy.ndarray
        ``2 * length / (c / 1.468)``. [ms]
    """
    return physics_bound_rtt_ms(length_km)


def link_lengths_km(network: Network, params: GraphLatencyParams) -> NDArray[np.float64]:
    """Route length of every link: published, else great circle times its kind's route factor.

    Parameters
    ----------
    network : Network
        Hubs and links.
    params : GraphLatencyParams
        Route factors.

    Returns
    -------
    numpy.ndarray
        One length per link, never below its great circle. [km]
    """
    links = network.links
    factor = np.where(links["kind"].eq("submarine"), params.route_factor_submarine, params.route_factor_terrestrial)
    modelled = links["great_circle_km"].to_numpy(float) * factor
    return np.asarray(links["length_km"].fillna(pd.Series(modelled, index=links.index)).to_numpy(float))


def crosses_firewall(network: Network) -> NDArray[np.bool_]:
    """True for every link with exactly one end in a country of :data:`FIREWALL_COUNTRIES`."""
    country = network.hubs.set_index("hub_id")["country_code"]
    inside_a = country.loc[network.links["a"]].isin(FIREWALL_COUNTRIES).to_numpy()
    inside_b = country.loc[network.links["b"]].isin(FIREWALL_COUNTRIES).to_numpy()
    return np.asarray(inside_a != inside_b)


def link_rtt_ms(network: Network, params: GraphLatencyParams) -> NDArray[np.float64]:
    """Round trip of every link: fiber over its route length, one hop delay, and the firewall where it crosses one.

    Parameters
    ----------
    network : Network
        Hubs and links.
    params : GraphLatencyParams
        Route factors and hop delay.

    Returns
    -------
    numpy.ndarray
        One round trip per link. [ms]
    """
    firewall = np.where(crosses_firewall(network), params.firewall_ms, 0.0)
    return fiber_rtt_ms(link_lengths_km(network, params)) + params.hop_ms + firewall


@lru_cache(maxsize=8)
def build_graph(network: Network, params: GraphLatencyParams) -> nx.Graph:
    """The NetworkX graph: hub nodes, link edges weighted by ``rtt_ms``.

    Parameters
    ----------
    network : Network
        Hubs and links.
    params : GraphLatencyParams
        Parameters that set the edge weights.

    Returns
    -------
    networkx.Graph
        Nodes are hub ids (attributes ``name, lat, lon, kind``); edges carry ``rtt_ms``,
        ``length_km``, ``kind`` and ``cables``. Where a pair of hubs has both a terrestrial and
        a submarine link, the faster one is the edge. Cached per (network, params): do not modify.
    """
    graph = nx.Graph()
    for hub in network.hubs.itertuples(index=False):
        graph.add_node(hub.hub_id, name=hub.name, lat=hub.lat, lon=hub.lon, kind=hub.kind)
    lengths, rtts = link_lengths_km(network, params), link_rtt_ms(network, params)
    for link, length, rtt in zip(network.links.itertuples(index=False), lengths, rtts, strict=True):
        if graph.has_edge(link.a, link.b) and graph.edges[link.a, link.b]["rtt_ms"] <= rtt:
            continue  # a terrestrial and a submarine route between the same hubs: keep the faster
        graph.add_edge(link.a, link.b, rtt_ms=float(rtt), length_km=float(length), kind=link.kind, cables=link.cables)
    return graph


@lru_cache(maxsize=8)
def hub_rtt_matrix_ms(network: Network, params: GraphLatencyParams) -> NDArray[np.float64]:
    """Shortest-path round trip between every pair of hubs (Dijkstra from every hub).

    Parameters
    ----------
    network : Network
        Hubs and links.
    params : GraphLatencyParams
        Parameters that set the edge weights.

    Returns
    -------
    numpy.ndarray
        ``(h, h)`` round trips in hub index order, without the per-path fixed delay. Cached per
        (network, params): read only. [ms]
    """
    graph = build_graph(network, params)
    index = {h: k for k, h in enumerate(network.hub_ids)}
    matrix = np.full((len(index), len(index)), np.inf)
    for source, lengths in nx.all_pairs_dijkstra_path_length(graph, weight="rtt_ms"):
        row = matrix[index[source]]
        for target, rtt in lengths.items():
            row[index[target]] = rtt
    matrix.setflags(write=False)
    return matrix


def nearest_hub(lat_deg: ArrayLike, lon_deg: ArrayLike, network: Network) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """The hub closest (great circle) to each point.

    Parameters
    ----------
    lat_deg, lon_deg : array_like
        Points (``n``). [degrees]
    network : Network
        Hubs.

    Returns
    -------
    tuple of numpy.ndarray
        Hub index of each point, and the great-circle distance to it. [km]
    """
    lat, lon = np.atleast_1d(np.asarray(lat_deg, dtype=float)), np.atleast_1d(np.asarray(lon_deg, dtype=float))
    points = unit_vectors(lat, lon)
    index = np.empty(len(points), dtype=np.intp)
    for start in range(0, len(points), _CHUNK_ROWS):
        block = points[start : start + _CHUNK_ROWS]
        index[start : start + len(block)] = np.argmax(block @ network.hub_vectors.T, axis=1)
    hub_lat, hub_lon = network.hubs["lat"].to_numpy(float), network.hubs["lon"].to_numpy(float)
    return index, great_circle_km(lat, lon, hub_lat[index], hub_lon[index])


def nearest_hubs(
    lat_deg: ArrayLike, lon_deg: ArrayLike, network: Network, k: int
) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """The ``k`` hubs closest (great circle) to each point.

    Parameters
    ----------
    lat_deg, lon_deg : array_like
        Points (``n``). [degrees]
    network : Network
        Hubs.
    k : int
        Hubs per point.

    Returns
    -------
    tuple of numpy.ndarray
        ``(n, k)`` hub indices, nearest first, and great-circle distances to them. [km]
    """
    lat, lon = np.atleast_1d(np.asarray(lat_deg, dtype=float)), np.atleast_1d(np.asarray(lon_deg, dtype=float))
    k = min(k, len(network.hubs))
    points = unit_vectors(lat, lon)
    index = np.empty((len(points), k), dtype=np.intp)
    for start in range(0, len(points), _CHUNK_ROWS):
        similarity = points[start : start + _CHUNK_ROWS] @ network.hub_vectors.T
        top = np.argpartition(-similarity, k - 1, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(similarity, top, axis=1), axis=1)
        index[start : start + len(top)] = np.take_along_axis(top, order, axis=1)
    hub_lat, hub_lon = network.hubs["lat"].to_numpy(float), network.hubs["lon"].to_numpy(float)
    return index, great_circle_km(lat[:, None], lon[:, None], hub_lat[index], hub_lon[index])


def access_rtt_ms(distance_km: ArrayLike, params: GraphLatencyParams, *, last_mile: bool) -> NDArray[np.float64]:
    """Round trip of the leg from a point to its hub.

    Parameters
    ----------
    distance_km : array_like
        Great circle from the point to its hub. [km]
    params : GraphLatencyParams
        Access route factor and last-mile delay.
    last_mile : bool
        Add the user's last mile (users: yes; data centers: no).

    Returns
    -------
    numpy.ndarray
        Round trip. [ms]
    """
    leg = fiber_rtt_ms(np.asarray(distance_km, dtype=float) * params.access_route_factor)
    return leg + (params.last_mile_ms if last_mile else 0.0)


# ----------------------------------------------------------------------------- round trips


def _graph_rtt_ms(
    lat_a: ArrayLike,
    lon_a: ArrayLike,
    lat_b: ArrayLike,
    lon_b: ArrayLike,
    params: GraphLatencyParams,
    network: Network,
    *,
    last_mile_a: bool,
) -> NDArray[np.float64]:
    """``(n, m)`` round trips: row access leg + hub-to-hub shortest path + column leg + fixed delay, bounded.

    A row point may reach the graph through any of its :data:`ACCESS_HUBS` nearest hubs and takes the
    quickest, so a city next to a border hub with no direct link is not routed round the world.
    """
    hubs_a, km_a = nearest_hubs(lat_a, lon_a, network, ACCESS_HUBS)
    hub_b, km_b = nearest_hub(lat_b, lon_b, network)
    leg_b = access_rtt_ms(km_b, params, last_mile=False) + params.fixed_ms
    to_b = hub_rtt_matrix_ms(network, params)[:, hub_b]
    rtt = np.full((hubs_a.shape[0], len(hub_b)), np.inf)
    for k in range(hubs_a.shape[1]):
        leg_a = access_rtt_ms(km_a[:, k], params, last_mile=last_mile_a)
        rtt = np.minimum(rtt, to_b[hubs_a[:, k]] + leg_a[:, None])
    rtt = rtt + leg_b[None, :]
    bound = physics_bound_rtt_ms(pairwise_km(lat_a, lon_a, lat_b, lon_b))
    return np.asarray(np.maximum(rtt, bound))


def population_site_rtt_ms(
    pop_lat_deg: ArrayLike,
    pop_lon_deg: ArrayLike,
    site_lat_deg: ArrayLike,
    site_lon_deg: ArrayLike,
    params: GraphLatencyParams,
    *,
    network: Network,
) -> NDArray[np.float64]:
    """Round trip from each population's users to each site over the graph, access leg included.

    ``rtt = user access leg + last mile + shortest hub-to-hub path + site leg + fixed delay``,
    never below the physics bound over the great circle between population and site.

    Parameters
    ----------
    pop_lat_deg, pop_lon_deg : array_like
        Population points (``n``). [degrees]
    site_lat_deg, site_lon_deg : array_like
        Site points (``m``). [degrees]
    params : GraphLatencyParams
        Model parameters (:func:`default_params` are the calibrated ones).
    network : Network
        Hubs and links (:func:`default_network` is the bundled one).

    Returns
    -------
    numpy.ndarray
        ``(n, m)`` round-trip times. [ms]
    """
    return _graph_rtt_ms(pop_lat_deg, pop_lon_deg, site_lat_deg, site_lon_deg, params, network, last_mile_a=True)


def site_site_rtt_ms(
    lat_a_deg: ArrayLike,
    lon_a_deg: ArrayLike,
    lat_b_deg: ArrayLike,
    lon_b_deg: ArrayLike,
    params: GraphLatencyParams,
    *,
    network: Network,
) -> NDArray[np.float64]:
    """Data-center-to-data-center round trips between two point sets (no last mile).

    Parameters
    ----------
    lat_a_deg, lon_a_deg : array_like
        The ``n`` row points. [degrees]
    lat_b_deg, lon_b_deg : array_like
        The ``m`` column points. [degrees]
    params : GraphLatencyParams
        Model parameters (:func:`default_params` are the calibrated ones).
    network : Network
        Hubs and links (:func:`default_network` is the bundled one).

    Returns
    -------
    numpy.ndarray
        ``(n, m)`` round-trip times, each equal to :func:`point_to_point_rtt_ms` with
        ``access=False``. [ms]
    """
    return _graph_rtt_ms(lat_a_deg, lon_a_deg, lat_b_deg, lon_b_deg, params, network, last_mile_a=False)


def point_to_point_rtt_ms(
    lat_a: float,
    lon_a: float,
    lat_b: float,
    lon_b: float,
    *,
    access: bool = False,
    params: GraphLatencyParams,
    network: Network,
) -> PointToPoint:
    """Round trip between two points over the graph, with the hubs it passes.

    Parameters
    ----------
    lat_a, lon_a, lat_b, lon_b : float
        The two ends. [degrees]
    access : bool, optional
        Add a user's last mile at both ends (city to city as a user sees it); default data
        center to data center.
    params : GraphLatencyParams
        Model parameters (:func:`default_params` are the calibrated ones).
    network : Network
        Hubs and links (:func:`default_network` is the bundled one).

    Returns
    -------
    PointToPoint
        ``(rtt_ms, path, bound_ms)``: round trip [ms], hub names along the path, and the physics
        bound over the great circle [ms].
    """
    hubs, km = nearest_hub([lat_a, lat_b], [lon_a, lon_b], network)
    ids = network.hub_ids
    nodes: list[str] = nx.dijkstra_path(build_graph(network, params), ids[hubs[0]], ids[hubs[1]], weight="rtt_ms")
    legs = access_rtt_ms(km, params, last_mile=access)
    rtt = float(hub_rtt_matrix_ms(network, params)[hubs[0], hubs[1]] + legs.sum() + params.fixed_ms)
    bound = float(physics_bound_rtt_ms(great_circle_km(lat_a, lon_a, lat_b, lon_b)))
    names = dict(zip(ids, network.hub_names, strict=True))
    return PointToPoint(rtt_ms=max(rtt, bound), path=[names[n] for n in nodes], bound_ms=bound)


# ----------------------------------------------------------------------------- export


def _unwrapped_line(lon0: float, lat0: float, lon1: float, lat1: float) -> LineString:
    """A line that goes the short way: the far end is shifted by ±360° so GDAL's RFC 7946 writer splits it."""
    if lon1 - lon0 > 180.0:
        lon1 -= 360.0
    elif lon0 - lon1 > 180.0:
        lon1 += 360.0
    return LineString([(lon0, lat0), (lon1, lat1)])


def hubs_frame(network: Network) -> gpd.GeoDataFrame:
    """Hubs as points, ready for GeoJSON.

    Parameters
    ----------
    network : Network
        Hubs and links.

    Returns
    -------
    geopandas.GeoDataFrame
        ``hub_id, name, country_code, kind`` and Point geometry in WGS84.
    """
    hubs = network.hubs
    geometry = [Point(lon, lat) for lon, lat in zip(hubs["lon"], hubs["lat"], strict=True)]
    return gpd.GeoDataFrame(hubs.drop(columns=["lat", "lon"]), geometry=geometry, crs=WGS84)


def links_frame(network: Network, params: GraphLatencyParams) -> gpd.GeoDataFrame:
    """Links as LineStrings (shifted across the antimeridian), ready for GeoJSON.

    Parameters
    ----------
    network : Network
        Hubs and links.
    params : GraphLatencyParams
        Parameters for the modelled lengths and round trips.

    Returns
    -------
    geopandas.GeoDataFrame
        ``a, b, kind, length_km`` (as modelled), ``published_length_km``, ``great_circle_km``,
        ``rtt_ms``, ``cables``, ``source`` and LineString geometry in WGS84.
    """
    links, hubs = network.links, network.hubs.set_index("hub_id")
    ends = np.column_stack(
        [hubs.loc[links["a"], "lon"], hubs.loc[links["a"], "lat"], hubs.loc[links["b"], "lon"], hubs.loc[links["b"], "lat"]]
    )
    frame = links.rename(columns={"length_km": "published_length_km"}).assign(
        length_km=link_lengths_km(network, params), rtt_ms=link_rtt_ms(network, params)
    )
    columns = ["a", "b", "kind", "length_km", "published_length_km", "great_circle_km", "rtt_ms", "cables", "source"]
    geometry = [_unwrapped_line(*row) for row in ends.tolist()]
    return gpd.GeoDataFrame(frame[columns], geometry=geometry, crs=WGS84)
