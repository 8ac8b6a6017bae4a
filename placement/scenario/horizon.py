"""The ``horizon:`` section of a scenario: a build-out planned year by year under uncertain demand.

A horizon names the years, the discount rate, the accelerators on offer in each year (with their node
price and power), the demand scenarios (growth per year by continent or country, with probabilities), the
class mix per year, when each site's power is energized (a schedule CSV) and the fleet already installed.
It is validated with the rest of the scenario, so every problem is reported with its key path.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field, model_validator

from placement.scenario._section import Section
from placement.world.regions import continents, is_region_key


class AcceleratorOffer(Section):
    """An accelerator that can be bought in some years of the horizon."""

    id: str = Field(min_length=1, description="accelerator id of data/serving/accelerators.csv")
    first_year: int | None = Field(None, description="first year it can be bought (null: the horizon's first)")
    last_year: int | None = Field(None, description="last year it can be bought (null: the horizon's last)")
    node_capex_usd: float | None = Field(None, gt=0, description="node price in first_year (null: the catalog's)")
    price_change_per_year: float = Field(
        0.0, gt=-1, lt=1, description="relative change of the node price per year after first_year (-0.1: 10 % cheaper)"
    )
    node_kw: float | None = Field(None, gt=0, description="IT power of one node [kW] (null: the catalog's)")
    precision: str | None = Field(
        None, description="weight precision it serves at (null: serving.precision), e.g. bf16 for a part without FP8"
    )

    @model_validator(mode="after")
    def _years_are_ordered(self) -> AcceleratorOffer:
        if self.first_year is not None and self.last_year is not None and self.last_year < self.first_year:
            raise ValueError(f"last_year ({self.last_year}) is before first_year ({self.first_year})")
        return self


class ModelChange(Section):
    """A different model served from a year on (e.g. a larger one): goodput per node changes with it."""

    year: int = Field(description="first year the new model is served")
    model: str = Field(min_length=1, description="model id of data/serving/models.csv")


class DemandScenario(Section):
    """One demand future: growth per year, by continent or country, and its probability."""

    name: str = Field(min_length=1, description="the demand future's name (low, base, high)")
    probability: float = Field(gt=0, le=1, description="its probability; the futures' probabilities sum to 1")
    growth_per_year: float = Field(0.0, gt=-1, description="relative demand growth per year after the first year")
    growth_by_region: dict[str, float] = Field(
        default_factory=dict, description="growth per year by continent name or ISO alpha-2 country (country wins)"
    )
    model_change: ModelChange | None = Field(None, description="serve another model from a year on (this scenario only)")

    @model_validator(mode="after")
    def _regions_are_known(self) -> DemandScenario:
        bad = [
            f"growth_by_region: {key!r} is neither an ISO alpha-2 country code nor one of {', '.join(continents())}"
            for key in self.growth_by_region
            if not is_region_key(key)
        ]
        bad += [f"growth_by_region.{key}: {value} must be > -1" for key, value in self.growth_by_region.items() if value <= -1]
        if bad:
            raise ValueError("; ".join(bad))
        return self


class ExistingNodes(Section):
    """Nodes already installed at a site before the horizon starts."""

    site: str = Field(min_length=1, description="site id of the catalog")
    accelerator: str = Field(min_length=1, description="accelerator id")
    nodes: int = Field(ge=0, description="nodes of that accelerator installed at the site")
    installed_year: int = Field(
        description="year the nodes went into service, before the horizon's first year (they retire after node_life_years)"
    )


class HorizonSection(Section):
    """A multi-year, multi-scenario build-out."""

    years: list[int] = Field(min_length=1, description="consecutive planning years, e.g. [2027, 2028, 2029]")
    discount_rate: float = Field(0.08, ge=0, lt=1, description="NPV discount rate per year")
    node_life_years: int | None = Field(None, ge=1, description="economic life of a node (null: economics.node_life_years)")
    accelerators: list[AcceleratorOffer] = Field(
        default_factory=list, description="accelerators on offer (empty: serving.accelerators, or serving.accelerator)"
    )
    demand_scenarios: list[DemandScenario] = Field(
        default_factory=lambda: [DemandScenario(name="base", probability=1.0)],
        description="demand futures; probabilities sum to 1",
    )
    class_shares: dict[int, dict[str, float]] = Field(
        default_factory=dict, description="class mix by year (linear between the years given, flat outside)"
    )
    power_schedule: str | None = Field(
        None, description="CSV site_id,year,mw_available: energized MW from that year on (sites not listed: the catalog's)"
    )
    existing_fleet: list[ExistingNodes] = Field(default_factory=list)
    unserved_penalty_usd_per_million_tokens: float = Field(
        50.0, gt=0, description="cost of a goodput token not served, so every recourse is feasible [USD/Mtok]"
    )
    integer_nodes: bool = Field(False, description="integer nodes (else continuous, rounded up and re-priced)")
    clusters: int | None = Field(None, ge=1, description="populations for the build-out (null: demand.clusters)")
    time_slices: int | None = Field(None, ge=1, le=24, description="time slices for the build-out (null: time.slices)")
    base_scenario: str | None = Field(None, description="scenario written per year (null: the most probable)")
    regret: bool = Field(False, description="also solve the min-max-regret plan")
    time_limit_s: float = Field(60.0, gt=0, description="wall-clock limit of each MILP (a safety net)")
    gap: float = Field(0.01, ge=0, lt=1, description="relative MIP gap of each solve")
    carbon_usd_per_t: dict[int, float] = Field(
        default_factory=dict,
        description="a carbon price path, USD per tCO2e by year (linear between the years given, held before the first "
        "and after the last; empty: objective.carbon_usd_per_t in every year)",
    )

    @model_validator(mode="after")
    def _consistent(self) -> HorizonSection:
        problems = []
        if any(b != a + 1 for a, b in zip(self.years, self.years[1:], strict=False)):
            problems.append(f"years must be consecutive and increasing, got {self.years}")
        names = [s.name for s in self.demand_scenarios]
        if len(set(names)) != len(names):
            problems.append(f"demand_scenarios names must be unique, got {names}")
        total = sum(s.probability for s in self.demand_scenarios)
        if abs(total - 1.0) > 1e-6:
            problems.append(f"demand_scenarios probabilities must sum to 1, they sum to {total:g}")
        if self.base_scenario is not None and self.base_scenario not in names:
            problems.append(f"base_scenario {self.base_scenario!r} is not one of {names}")
        ids = [a.id for a in self.accelerators]
        if len(set(ids)) != len(ids):
            problems.append(f"accelerators must be listed once each, got {ids}")
        for n, entry in enumerate(self.existing_fleet):
            if self.years and entry.installed_year >= self.years[0]:
                # Its capex is sunk, so nodes "installed" inside the horizon would come free: a purchase the plan decides.
                problems.append(
                    f"existing_fleet[{n}].installed_year {entry.installed_year} is inside the horizon (from {self.years[0]}): "
                    "the existing fleet is what is installed before it starts, its capex sunk; leave later purchases to the "
                    f"plan, or give the year the nodes went into service before {self.years[0]}"
                )
        if any(price < 0 for price in self.carbon_usd_per_t.values()):
            problems.append(f"carbon_usd_per_t: prices must be >= 0, got {self.carbon_usd_per_t}")
        for year, shares in self.class_shares.items():
            if any(v < 0 for v in shares.values()) or abs(sum(shares.values()) - 1.0) > 1e-6:
                problems.append(f"class_shares.{year}: shares must be >= 0 and sum to 1, got {shares}")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def carbon_price_path(self, flat_usd_per_t: float) -> list[float]:
        """The carbon price in each planning year: :attr:`carbon_usd_per_t` interpolated, else ``flat_usd_per_t``."""
        if not self.carbon_usd_per_t:
            return [flat_usd_per_t] * len(self.years)
        given = sorted(self.carbon_usd_per_t.items())
        return [float(np.interp(year, [y for y, _ in given], [p for _, p in given])) for year in self.years]

    @property
    def base(self) -> str:
        """The scenario written per year: ``base_scenario`` or the most probable."""
        if self.base_scenario is not None:
            return self.base_scenario
        return max(self.demand_scenarios, key=lambda s: s.probability).name
