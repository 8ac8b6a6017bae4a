"""The whole scenario: every section in its place, and the rules that span sections."""

from __future__ import annotations

from pydantic import Field, model_validator

from placement.scenario._section import Section
from placement.scenario.classes import WorkloadClass
from placement.scenario.horizon import HorizonSection
from placement.scenario.sections import (
    AvailabilitySection,
    DemandSection,
    EconomicsSection,
    FaultToleranceSection,
    LatencySection,
    ObjectiveSection,
    PolicySection,
    ResidencySection,
    ServingSection,
    SitesOpenSection,
    SitesSection,
    SolverSection,
    TimeSection,
)


class Scenario(Section):
    """A whole scenario."""

    name: str = Field(min_length=1, description="the scenario's name, carried into summary.json and the reports")
    description: str = Field("", description="what the scenario is, for planners (placement scenarios lists it)")
    sites: SitesSection
    demand: DemandSection
    classes: list[WorkloadClass] = Field(min_length=1)
    serving: ServingSection
    latency: LatencySection = LatencySection()
    economics: EconomicsSection
    solver: SolverSection = SolverSection()
    objective: ObjectiveSection = ObjectiveSection()
    policy: PolicySection = PolicySection()
    time: TimeSection = TimeSection()
    residency: ResidencySection = ResidencySection()
    availability: AvailabilitySection = AvailabilitySection()
    sites_open: SitesOpenSection = SitesOpenSection()
    fault_tolerance: FaultToleranceSection = FaultToleranceSection()
    horizon: HorizonSection | None = Field(
        None, description="plan a multi-year build-out: years, accelerator generations, demand scenarios (null: one year)"
    )

    @property
    def is_buildout(self) -> bool:
        """Whether the scenario runs the build-out engine (a horizon, or a fleet mix of accelerators)."""
        return self.horizon is not None or self.serving.accelerators is not None

    @model_validator(mode="after")
    def _ladder_shares(self) -> Scenario:
        ladder = self.serving.node_ttft_ladder
        if ladder is not None and not all(0 < share < 1 for share in ladder):
            raise ValueError(f"serving.node_ttft_ladder: every share must be between 0 and 1 (exclusive), got {ladder}")
        return self

    @model_validator(mode="after")
    def _horizon_names_classes(self) -> Scenario:
        if self.horizon is None:
            return self
        names = {c.name for c in self.classes}
        for year, shares in self.horizon.class_shares.items():
            if set(shares) != names:
                raise ValueError(
                    f"horizon.class_shares.{year} must give a share for each class {sorted(names)}, got {sorted(shares)}"
                )
        offered = {a.id for a in self.horizon.accelerators} or set(self.serving.accelerators or [self.serving.accelerator])
        for k, existing in enumerate(self.horizon.existing_fleet):
            if existing.accelerator not in offered:
                raise ValueError(
                    f"horizon.existing_fleet[{k}].accelerator {existing.accelerator!r} is not one of the accelerators "
                    f"{sorted(offered)}"
                )
        return self

    @model_validator(mode="after")
    def _classes_are_consistent(self) -> Scenario:
        names = [c.name for c in self.classes]
        if len(set(names)) != len(names):
            raise ValueError(f"class names must be unique, got {names}")
        total = sum(c.share for c in self.classes)
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"class shares must sum to 1, they sum to {total:g}")
        bounds = self.sites_open
        if bounds.min is not None and bounds.max is not None and bounds.min > bounds.max:
            raise ValueError(f"sites_open.min ({bounds.min}) exceeds sites_open.max ({bounds.max})")
        if self.time.slices > 1 and self.time.profile is None:
            raise ValueError("time.slices > 1 needs time.profile (a diurnal profile by local hour)")
        for rule in self.residency.rules:
            for code in rule.populations + rule.sites:
                if code not in self.residency.groups and not (len(code) == 2 and code.isupper()):
                    raise ValueError(f"residency code {code!r} is neither an ISO alpha-2 code nor a group name")
        return self
