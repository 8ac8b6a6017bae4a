"""Package discovery for setuptools; everything else (metadata, dependencies, package data) is in pyproject.toml.

The code is every package below ``placement/``, found rather than listed, so a new subpackage cannot be left out of
the wheel; the bundled files of ``data/`` are installed as ``placement.data`` and its subfolders. A static
``[tool.setuptools.packages.find]`` cannot do both: it has no way to rename ``data`` to ``placement.data``.
"""

from setuptools import find_namespace_packages, setup

EXCLUDE = ["*.__pycache__", "__pycache__"]
CODE = find_namespace_packages(include=["placement", "placement.*"], exclude=EXCLUDE)
DATA = ["placement.data", *(f"placement.data.{name}" for name in find_namespace_packages(where="data", exclude=EXCLUDE))]

setup(packages=CODE + DATA, package_dir={"placement.data": "data"})
