"""``plan.qgz``: a QGIS project that opens the plan's GeoPackage layers styled, over the Natural Earth basemap.

The project (``plan.qgs`` zipped, QGIS's own ``.qgz`` form) names each layer of ``plan.gpkg`` by a path relative to
itself (``./plan.gpkg|layername=sites``), so the folder can be moved or sent whole; each layer carries the same
renderer as its ``layer_styles`` row, and the layer tree lists them top first (sites over populations over lines
over catchments over the countries), as ``map.png`` stacks them. Written from the styles alone: nothing here
imports QGIS.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Sequence
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from placement.outputs.geopackage import GPKG_NAME, StyledLayer
from placement.outputs.qgis_style import QGIS_VERSION

QGZ_NAME = "plan.qgz"

WGS84_XML = (
    '<spatialrefsys><wkt>GEOGCRS["WGS 84",DATUM["World Geodetic System 1984",ELLIPSOID["WGS 84",6378137,'
    '298.257223563,LENGTHUNIT["metre",1]]],PRIMEM["Greenwich",0,ANGLEUNIT["degree",0.0174532925199433]],'
    'CS[ellipsoidal,2],AXIS["geodetic latitude (Lat)",north,ORDER[1],ANGLEUNIT["degree",0.0174532925199433]],'
    'AXIS["geodetic longitude (Lon)",east,ORDER[2],ANGLEUNIT["degree",0.0174532925199433]],ID["EPSG",4326]]</wkt>'
    "<proj4>+proj=longlat +datum=WGS84 +no_defs</proj4><srsid>3452</srsid><srid>4326</srid><authid>EPSG:4326</authid>"
    "<description>WGS 84</description><projectionacronym>longlat</projectionacronym><ellipsoidacronym>EPSG:7030"
    "</ellipsoidacronym><geographicflag>true</geographicflag></spatialrefsys>"
)
"""EPSG:4326 as QGIS writes it (WKT, PROJ string and ids: any QGIS 3 resolves one of them)."""


def _layer_id(layer: StyledLayer) -> str:
    return f"{layer.name}_placement"


def _source(layer: StyledLayer) -> str:
    return f"./{GPKG_NAME}|layername={layer.name}"


def _extent(layers: Sequence[StyledLayer]) -> tuple[float, float, float, float]:
    """The project's initial view: the whole world the layers span, a little padded."""
    bounds = [layer.frame.total_bounds for layer in layers if len(layer.frame)]
    if not bounds:
        return (-180.0, -60.0, 180.0, 85.0)
    xmin = max(min(b[0] for b in bounds) - 2, -180.0)
    ymin = max(min(b[1] for b in bounds) - 2, -90.0)
    xmax = min(max(b[2] for b in bounds) + 2, 180.0)
    ymax = min(max(b[3] for b in bounds) + 2, 90.0)
    return (float(xmin), float(ymin), float(xmax), float(ymax))


def _maplayer(layer: StyledLayer) -> str:
    xmin, ymin, xmax, ymax = (float(v) for v in layer.frame.total_bounds)
    return (
        f'<maplayer type="vector" geometry="{layer.style.geometry}" autoRefreshEnabled="0" readOnly="0" '
        'hasScaleBasedVisibilityFlag="0" minScale="100000000" maxScale="0" simplifyDrawingHints="1" '
        'simplifyAlgorithm="0" simplifyLocal="1" simplifyMaxScale="1" simplifyDrawingTol="1" labelsEnabled="0" '
        'refreshOnNotifyEnabled="0" styleCategories="AllStyleCategories">'
        f"<extent><xmin>{xmin}</xmin><ymin>{ymin}</ymin><xmax>{xmax}</xmax><ymax>{ymax}</ymax></extent>"
        f"<id>{_layer_id(layer)}</id><datasource>{escape(_source(layer))}</datasource>"
        f"<keywordList><value></value></keywordList><layername>{escape(layer.name)}</layername>"
        f"<srs>{WGS84_XML}</srs><abstract>{escape(layer.style.description)}</abstract>"
        '<provider encoding="UTF-8">ogr</provider>'
        f"{layer.style.renderer_xml()}"
        "<blendMode>0</blendMode><featureBlendMode>0</featureBlendMode><layerOpacity>1</layerOpacity>"
        "</maplayer>"
    )


def project_xml(layers: Sequence[StyledLayer], *, title: str) -> str:
    """The ``.qgs`` document for the layers (bottom first, as :func:`placement.outputs.geopackage.plan_layers`).

    Parameters
    ----------
    layers : sequence of StyledLayer
        The layers of ``plan.gpkg``.
    title : str
        The project's title (the plan's headline).

    Returns
    -------
    str
        The project as QGIS XML.
    """
    top_first = list(reversed(layers))
    tree = "".join(
        f'<layer-tree-layer id="{_layer_id(layer)}" name={quoteattr(layer.name)} source={quoteattr(_source(layer))} '
        'providerKey="ogr" checked="Qt::Checked" expanded="1"><customproperties/></layer-tree-layer>'
        for layer in top_first
    )
    order = "".join(f'<layer id="{_layer_id(layer)}"/>' for layer in top_first)
    xmin, ymin, xmax, ymax = _extent(layers)
    return (
        "<!DOCTYPE qgis PUBLIC 'http://mrcc.com/qgis.dtd' 'SYSTEM'>"
        f'<qgis projectname={quoteattr(title)} version="{QGIS_VERSION}">'
        '<homePath path=""/>'
        f"<title>{escape(title)}</title>"
        f"<projectCrs>{WGS84_XML}</projectCrs>"
        f'<layer-tree-group><customproperties/>{tree}<custom-order enabled="0">{order}</custom-order></layer-tree-group>'
        '<mapcanvas name="theMapCanvas" annotationsVisible="1"><units>degrees</units>'
        f"<extent><xmin>{xmin}</xmin><ymin>{ymin}</ymin><xmax>{xmax}</xmax><ymax>{ymax}</ymax></extent>"
        f"<rotation>0</rotation><destinationsrs>{WGS84_XML}</destinationsrs><rendermaptile>0</rendermaptile>"
        "</mapcanvas>"
        f"<projectlayers>{''.join(_maplayer(layer) for layer in layers)}</projectlayers>"
        f"<layerorder>{order}</layerorder>"
        '<properties><Paths><Absolute type="bool">false</Absolute></Paths>'
        '<Measure><Ellipsoid type="QString">EPSG:7030</Ellipsoid></Measure></properties>'
        "</qgis>"
    )


def write_qgis_project(layers: Sequence[StyledLayer], path: Path, *, title: str) -> Path:
    """Write ``plan.qgz`` beside ``plan.gpkg``.

    Parameters
    ----------
    layers : sequence of StyledLayer
        The layers of ``plan.gpkg``, bottom first.
    path : Path
        The ``.qgz`` file.
    title : str
        The project's title.

    Returns
    -------
    Path
        The file written.
    """
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(path.with_suffix(".qgs").name, project_xml(layers, title=title))
    path.write_bytes(buffer.getvalue())
    return path
