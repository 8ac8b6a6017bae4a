"""Bundled data, installed as the package ``placement.data``; read it through :mod:`placement.bundled`."""
