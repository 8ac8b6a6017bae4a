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

import difflib
import json
import math
import re
from dataclasses import asdict, dataclass, fields
from functools import cached_property, lru_cache
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd
from numpy.typing import NDArray

from placement._errors import InputError, Problem
from placement.bundled import bundled_path
from placement.geodesy import great_circle_km, unit_vectors

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

_HUB_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_BLANK = {"", "nan", "na", "null", "none"}


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
