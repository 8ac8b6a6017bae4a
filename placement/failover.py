"""The failover tables of an N+1 plan (placeholder: the lead's module replaces this file)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class FailoverTables:
    """What each failure scenario of an N+1 plan moves where.

    Attributes
    ----------
    rows : pandas.DataFrame
        ``failover.csv``: one row per (scenario, protected commodity, slice, serving site after the loss).
    sites : pandas.DataFrame
        ``failover_sites.csv``: one row per (scenario, surviving site taking moved load, slice).
    scenarios : pandas.DataFrame
        ``failover_scenarios.csv``: one row per failure scenario.
    """

    rows: pd.DataFrame
    sites: pd.DataFrame
    scenarios: pd.DataFrame
