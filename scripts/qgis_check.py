"""Open a results folder's ``plan.qgz`` in a real QGIS, check every layer, render it, and print what it found as JSON.

Runs in the interpreter that has QGIS's Python bindings (Debian's ``python3`` with ``python3-qgis``), not the
project's venv, headless (``QT_QPA_PLATFORM=offscreen``)::

    QT_QPA_PLATFORM=offscreen /usr/bin/python3 scripts/qgis_check.py RESULTS_FOLDER --png render.png

For each layer of the project: whether it is valid, its feature count, its renderer's type and legend labels, and
whether its style in ``plan.gpkg``'s ``layer_styles`` loads as the default style; GDAL (``osgeo.ogr``) opens every
layer of ``plan.gpkg`` with its feature count; the project's map is rendered to a PNG and the pixels that differ
from the background counted. Exit code 0 when every layer is valid and styled and the render is not empty.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--png", type=Path, required=True)
    parser.add_argument("--width", type=int, default=1600)
    args = parser.parse_args()

    from osgeo import ogr
    from qgis.core import (
        QgsApplication,
        QgsMapRendererParallelJob,
        QgsMapSettings,
        QgsProject,
        QgsRectangle,
        QgsVectorLayer,
    )
    from qgis.PyQt.QtCore import QSize
    from qgis.PyQt.QtGui import QColor

    app = QgsApplication([], False)
    app.initQgis()
    out: dict[str, object] = {}
    try:
        project = QgsProject.instance()
        read = project.read(str(args.folder / "plan.qgz"))
        out["project_read"] = bool(read)
        layers = []
        for layer in project.layerTreeRoot().layerOrder():
            renderer = layer.renderer() if isinstance(layer, QgsVectorLayer) else None
            legend = [item.label() for item in renderer.legendSymbolItems()] if renderer is not None else []
            from_gpkg = QgsVectorLayer(f"{args.folder / 'plan.gpkg'}|layername={layer.name()}", layer.name(), "ogr")
            _message, loaded = from_gpkg.loadDefaultStyle()
            layers.append(
                {
                    "name": layer.name(),
                    "valid": layer.isValid(),
                    "features": layer.featureCount() if isinstance(layer, QgsVectorLayer) else None,
                    "renderer": renderer.type() if renderer is not None else None,
                    "legend": legend,
                    "gpkg_style_loaded": bool(loaded),
                    "gpkg_style_renderer": from_gpkg.renderer().type() if from_gpkg.renderer() is not None else None,
                }
            )
        out["layers"] = layers
        source = ogr.Open(str(args.folder / "plan.gpkg"))
        out["gdal_layers"] = {
            source.GetLayerByIndex(k).GetName(): source.GetLayerByIndex(k).GetFeatureCount()
            for k in range(source.GetLayerCount())
        }
        settings = QgsMapSettings()
        settings.setLayers(project.layerTreeRoot().layerOrder())
        settings.setDestinationCrs(project.crs())
        settings.setBackgroundColor(QColor(255, 255, 255))
        extent = QgsRectangle(-180, -60, 180, 85)
        settings.setOutputSize(QSize(args.width, int(args.width * extent.height() / extent.width())))
        settings.setExtent(extent)
        job = QgsMapRendererParallelJob(settings)
        job.start()
        job.waitForFinished()
        image = job.renderedImage()
        image.save(str(args.png), "PNG")
        white = QColor(255, 255, 255).rgb()
        drawn = sum(1 for y in range(0, image.height(), 4) for x in range(0, image.width(), 4) if image.pixel(x, y) != white)
        out["png"] = str(args.png)
        out["png_size"] = [image.width(), image.height()]
        out["png_drawn_share"] = drawn / max(1, len(range(0, image.height(), 4)) * len(range(0, image.width(), 4)))
    finally:
        QgsProject.instance().clear()
    print(json.dumps(out, indent=1), flush=True)
    layers_ok = all(
        layer["valid"]
        and layer["renderer"] == "RuleRenderer"
        and layer["legend"]
        and layer["gpkg_style_loaded"]
        and layer["gpkg_style_renderer"] == "RuleRenderer"
        for layer in out["layers"]  # type: ignore[attr-defined]
    )
    code = 0 if out["project_read"] and layers_ok and out["png_drawn_share"] > 0.05 else 1  # type: ignore[operator]
    # Leave without QGIS's teardown: QGIS 3.22's exitQgis can crash a headless process after its work is done (seen
    # here: a segmentation fault after the JSON was printed); the answer is already out.
    sys.stdout.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
