"""The base of every section of a scenario file: no unknown keys, frozen, finite numbers only."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    """A section of a scenario file: an unknown key is an error, values are frozen, no ``.inf`` or ``.nan``."""

    # No .inf or .nan anywhere: an infinite objective or multiplier is never what a planner meant.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
