"""QGIS styles of the plan's layers, as QML: the colours and legend of ``map.png`` for a GIS team's own maps.

Every layer gets a rule-based renderer (QGIS ``RuleRenderer``): one rule per legend entry, each with its filter
expression, label and symbol, so the layer's legend in QGIS reads as ``map.png``'s does. Marker sizes that follow a
figure (MW used, demand) are data-defined expressions. The style XML is what QGIS itself writes for such
renderers (``renderer-v2`` with ``<prop k v>`` symbol-layer properties, read by every QGIS 3 release); it is kept
in the GeoPackage's ``layer_styles`` table (:mod:`placement.outputs.geopackage`) and inside ``plan.qgz``
(:mod:`placement.outputs.qgis_project`). Nothing here imports QGIS.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from xml.sax.saxutils import quoteattr

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.colors import to_rgba

from placement.outputs.classes import DEADLINE_COLOUR, class_colours, deadline_classes
from placement.outputs.world_map import COST_CMAP, NO_COST_COLOUR, cost_norm

QGIS_VERSION = "3.22.16-Białowieża"
"""The QGIS release the styles and project are written for (Debian 12's ``qgis``; later 3.x read them too)."""


def qgis_colour(colour: str, alpha: float | None = None) -> str:
    """A matplotlib colour as QGIS writes one: ``r,g,b,a`` in 0-255."""
    r, g, b, a = to_rgba(colour, alpha)
    return ",".join(str(round(255 * v)) for v in (r, g, b, a))


@dataclass(frozen=True)
class Symbol:
    """One QGIS symbol: a simple marker, line or fill.

    Parameters
    ----------
    kind : {"marker", "line", "fill"}
        Its geometry.
    colour : str
        Fill colour (markers, fills) or line colour.
    outline : str
        Outline colour (``"none"``: no outline).
    size : float
        Marker size or line width. [mm]
    shape : str
        Marker shape (``circle``, ``triangle``, ``cross2``).
    alpha : float
        Opacity of the whole symbol.
    size_expression : str
        A QGIS expression for the marker size (data-defined; "" for the fixed size). [mm]
    outline_width : float
        [mm]
    """

    kind: str
    colour: str
    outline: str = "none"
    size: float = 2.0
    shape: str = "circle"
    alpha: float = 1.0
    size_expression: str = ""
    outline_width: float = 0.26

    def xml(self, name: str) -> str:
        """The ``<symbol>`` element."""
        if self.kind == "marker":
            props = {
                "name": self.shape, "color": qgis_colour(self.colour), "outline_color": qgis_colour(self.outline),
                "outline_style": "no" if self.outline == "none" else "solid", "outline_width": f"{self.outline_width:g}",
                "outline_width_unit": "MM", "size": f"{self.size:g}", "size_unit": "MM", "scale_method": "diameter",
                "joinstyle": "bevel", "angle": "0",
            }  # fmt: skip
            layer_class = "SimpleMarker"
        elif self.kind == "line":
            props = {
                "line_color": qgis_colour(self.colour), "line_width": f"{self.size:g}", "line_width_unit": "MM",
                "line_style": "solid", "capstyle": "round", "joinstyle": "round",
            }  # fmt: skip
            layer_class = "SimpleLine"
        else:
            props = {
                "color": qgis_colour(self.colour), "style": "solid", "outline_color": qgis_colour(self.outline),
                "outline_style": "no" if self.outline == "none" else "solid", "outline_width": f"{self.outline_width:g}",
                "outline_width_unit": "MM",
            }  # fmt: skip
            layer_class = "SimpleFill"
        body = "".join(f"<prop k={quoteattr(k)} v={quoteattr(v)}/>" for k, v in props.items())
        defined = _size_defined(self.size_expression) if self.size_expression else _no_defined()
        return (
            f'<symbol type="{self.kind}" name={quoteattr(name)} alpha="{self.alpha:g}" clip_to_extent="1" force_rhr="0">'
            f"{_no_defined()}"
            f'<layer class="{layer_class}" enabled="1" locked="0" pass="0">{body}{defined}</layer></symbol>'
        )


def _no_defined() -> str:
    return (
        '<data_defined_properties><Option type="Map"><Option type="QString" name="name" value=""/>'
        '<Option name="properties"/><Option type="QString" name="type" value="collection"/></Option>'
        "</data_defined_properties>"
    )


def _size_defined(expression: str) -> str:
    return (
        '<data_defined_properties><Option type="Map"><Option type="QString" name="name" value=""/>'
        '<Option type="Map" name="properties"><Option type="Map" name="size">'
        '<Option type="bool" name="active" value="true"/>'
        f'<Option type="QString" name="expression" value={quoteattr(expression)}/>'
        '<Option type="int" name="type" value="3"/></Option></Option>'
        '<Option type="QString" name="type" value="collection"/></Option></data_defined_properties>'
    )


@dataclass(frozen=True)
class Rule:
    """One legend entry: the features a filter expression selects, drawn with a symbol (unless unchecked)."""

    label: str
    filter: str
    symbol: Symbol
    checked: bool = True


@dataclass(frozen=True)
class LayerStyle:
    """A layer's style: its rules, first drawn first.

    Parameters
    ----------
    layer : str
        The GeoPackage layer it styles.
    geometry : {"Point", "Line", "Polygon"}
        Its geometry type, as QGIS names it.
    rules : sequence of Rule
        Its legend entries.
    description : str
        What the layer shows.
    """

    layer: str
    geometry: str
    rules: Sequence[Rule] = field(default_factory=tuple)
    description: str = ""

    def renderer_xml(self) -> str:
        """The ``<renderer-v2>`` element of a rule-based renderer."""
        rules = "".join(
            f'<rule key="{{rule-{k}}}" symbol="{k}" label={quoteattr(rule.label)} filter={quoteattr(rule.filter)}'
            + ("" if rule.checked else ' checkstate="0"')
            + "/>"
            for k, rule in enumerate(self.rules)
        )
        symbols = "".join(rule.symbol.xml(str(k)) for k, rule in enumerate(self.rules))
        return (
            '<renderer-v2 type="RuleRenderer" symbollevels="0" enableorderby="0" forceraster="0">'
            f'<rules key="{{root}}">{rules}</rules><symbols>{symbols}</symbols></renderer-v2>'
        )

    def qml(self) -> str:
        """The whole QML document (what QGIS saves as a layer's style)."""
        return (
            f"<!DOCTYPE qgis PUBLIC 'http://mrcc.com/qgis.dtd' 'SYSTEM'>"
            f'<qgis version="{QGIS_VERSION}" styleCategories="Symbology">{self.renderer_xml()}'
            "<blendMode>0</blendMode><featureBlendMode>0</featureBlendMode><layerOpacity>1</layerOpacity></qgis>"
        )


COUNTRY_FILL = "#eceae4"
COUNTRY_EDGE = "#b8b5ad"
SERVED_COLOUR = "#2b5c8a"
UNSERVED_COLOUR = "#c0392b"
CLOSED_COLOUR = "#6b6b6b"
DISCOVERED_COLOUR = "#e6550d"
TERRESTRIAL_COLOUR = "#8a6d3b"
SUBMARINE_COLOUR = "#2a7fb8"
COST_CLASSES = 6
"""Colour classes of the open sites' $/M (the colour bar of ``map.png`` cut into steps a legend can list)."""


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def sites_style(sites: pd.DataFrame, *, layer: str = "sites") -> LayerStyle:
    """Open sites as discs sized by MW, coloured by $/M in ``map.png``'s colour scale; others as hollow triangles."""
    norm = cost_norm(sites)
    cmap = matplotlib.colormaps[COST_CMAP]
    edges = np.linspace(float(norm.vmin or 0.0), float(norm.vmax or 1.0), COST_CLASSES + 1)
    mw = sites.loc[sites["open"].astype(bool), "mw_used"].to_numpy(float)
    largest = max(float(np.nanmax(mw)) if len(mw) else 1.0, 1e-9)
    size = f'2 + 8 * sqrt(coalesce("mw_used", 0) / {largest:.6g})'  # area ~ MW, as map.png
    rules = [Rule("candidate site, not opened", 'NOT "open"', Symbol("marker", "none", CLOSED_COLOUR, 2.2, "triangle"))]
    cost = '"cost_per_million_goodput_tokens_usd"'
    for k in range(COST_CLASSES):
        low, high = float(edges[k]), float(edges[k + 1])
        colour = matplotlib.colors.to_hex(cmap((k + 0.5) / COST_CLASSES))
        upper = f"{cost} < {high:.6g}" if k < COST_CLASSES - 1 else "TRUE"  # the top class takes the rest ("extend")
        lower = f"{cost} >= {low:.6g}" if k else "TRUE"
        label = f"open: ${low:,.2f}-{high:,.2f} per million goodput tokens" + (" and over" if k == COST_CLASSES - 1 else "")
        rules.append(Rule(label, f'"open" AND {cost} IS NOT NULL AND {lower} AND {upper}',
                          Symbol("marker", colour, "#000000", 4, size_expression=size)))  # fmt: skip
    rules.append(Rule("open, no goodput", f'"open" AND {cost} IS NULL',
                      Symbol("marker", NO_COST_COLOUR, "#000000", 3, size_expression=size)))  # fmt: skip
    return LayerStyle(layer, "Point", rules, "candidate sites: open ones by $/M goodput, area ~ MW")


def populations_style(populations: pd.DataFrame) -> LayerStyle:
    """Served populations as blue dots sized by demand; those left unserved as red crosses (``map.png``)."""
    largest = max(float(populations["demand_tok_s"].max()) if len(populations) else 1.0, 1e-9)
    size = f'1 + 4 * sqrt(coalesce("demand_tok_s", 0) / {largest:.6g})'
    unserved = '"unserved_tok_s" > 0.000001 * max("demand_tok_s", 1)'
    return LayerStyle("populations", "Point", [
        Rule("population served (area ~ demand)", f"NOT ({unserved})",
             Symbol("marker", SERVED_COLOUR, "none", 2, alpha=0.5, size_expression=size)),
        Rule("population not served inside its TTFT objective", unserved,
             Symbol("marker", UNSERVED_COLOUR, UNSERVED_COLOUR, 3, "cross2", outline_width=0.5)),
    ], "populations (cities or clusters), by demand and whether they are served")  # fmt: skip


def assignments_style(assignments: pd.DataFrame) -> LayerStyle:
    """Population-to-site lines, one colour per interactive class, deadline classes in their own colour."""
    rules = [
        Rule(f"population -> site, class {name}", f'"class" = {_quote(name)}', Symbol("line", colour, size=0.2, alpha=0.5))
        for name, colour in class_colours(assignments).items()
    ]
    rules += [  # off at first, as map.png leaves them to its inset: a GIS user ticks them on in the legend
        Rule(f"population -> site, class {name} (deadline in hours)", f'"class" = {_quote(name)}',
             Symbol("line", DEADLINE_COLOUR, size=0.15, alpha=0.35), checked=False)
        for name in deadline_classes(assignments)
    ]  # fmt: skip
    return LayerStyle("assignments", "Line", rules, "which site serves each population and class")


def catchments_style() -> LayerStyle:
    """The land each open site serves: faint tints with grey outlines (``map.png``'s catchments)."""
    return LayerStyle("catchments", "Polygon", [
        Rule("catchment: land whose users one site serves", "TRUE",
             Symbol("fill", "#fbb4ae", "#8a8a8a", alpha=0.45, outline_width=0.15)),
    ], "the land whose users each open site serves")  # fmt: skip


def network_style() -> LayerStyle:
    """Long-haul links: terrestrial brown, submarine blue (``map.html``'s links), unticked at first."""
    return LayerStyle("network", "Line", [  # off at first, as map.png does not draw them: ticked on in the legend
        Rule("terrestrial link", "\"kind\" <> 'submarine'", Symbol("line", TERRESTRIAL_COLOUR, size=0.25, alpha=0.8),
             checked=False),
        Rule("submarine link", "\"kind\" = 'submarine'", Symbol("line", SUBMARINE_COLOUR, size=0.25, alpha=0.8),
             checked=False),
    ], "the latency graph's long-haul links the round trips were computed on")  # fmt: skip


def countries_style() -> LayerStyle:
    """The Natural Earth basemap: ``map.png``'s land colour and outlines."""
    return LayerStyle("countries", "Polygon", [
        Rule("country (Natural Earth 1:110m)", "TRUE", Symbol("fill", COUNTRY_FILL, COUNTRY_EDGE, outline_width=0.1)),
    ], "Natural Earth 1:110m countries (public domain)")  # fmt: skip


def discovered_style(discovered: pd.DataFrame) -> LayerStyle:
    """Discovered sites: orange stars sized by the MW worth building there."""
    largest = max(float(discovered["mw_built"].max()) if len(discovered) else 1.0, 1e-9)
    return LayerStyle("discovered_sites", "Point", [
        Rule("discovered site, worth building (area ~ MW)", '"mw_built" > 0',
             Symbol("marker", DISCOVERED_COLOUR, "#000000", 4, "star",
                    size_expression=f'3 + 5 * sqrt(coalesce("mw_built", 0) / {largest:.6g})')),
        Rule("discovered site, not worth building", 'coalesce("mw_built", 0) <= 0',
             Symbol("marker", "none", DISCOVERED_COLOUR, 2.5, "star")),
    ], "greenfield sites placement discover proposes")  # fmt: skip


def failover_style() -> LayerStyle:
    """Sites that take load when another fails (N+1 plans): sized by the most they take."""
    return LayerStyle("failover_sites", "Point", [
        Rule("site that takes failed-over load", "TRUE", Symbol("marker", "#984ea3", "#000000", 3)),
    ], "N+1: each open site's share of the load it takes when another site fails")  # fmt: skip
