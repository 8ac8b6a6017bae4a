"""Scenario sweeps: the sweep file, case expansion, solving on Dask, and the analysis of the results."""
