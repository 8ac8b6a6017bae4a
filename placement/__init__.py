"""placement: where LLM inference capacity should live, at the lowest cost per million goodput tokens.

The verbs a notebook or a script needs, importable from the package itself::

    import placement

    loaded = placement.load_scenario(placement.scenario_file("europe-small"))
    plan = placement.run(loaded)                       # a verified Plan
    placement.write_results(plan, "out")               # the results folder, whole or not at all

    loaded = placement.load_scenario(placement.scenario_file("buildout"))
    result = placement.solve_stochastic(placement.build_buildout(loaded))
    placement.write_buildout(result, "out-buildout")

Names are imported on first use (PEP 562), so ``import placement`` stays cheap and no module of the package
imports a later stage through this file.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from placement.buildout.arrays import build_buildout
    from placement.buildout.solve import solve_stochastic
    from placement.optimize.facility_location import FacilityLocationResult, facility_location
    from placement.outputs.buildout import write_buildout
    from placement.outputs.writer import write_results
    from placement.plan.record import Plan
    from placement.plan.solve import run
    from placement.scenario.load import LoadedScenario, load_scenario
    from placement.world.bundled import describe_scenarios, scenario_file

#: Each exported name and the module that defines it.
_EXPORTS = {
    "FacilityLocationResult": "placement.optimize.facility_location",
    "LoadedScenario": "placement.scenario.load",
    "Plan": "placement.plan.record",
    "build_buildout": "placement.buildout.arrays",
    "describe_scenarios": "placement.world.bundled",
    "facility_location": "placement.optimize.facility_location",
    "load_scenario": "placement.scenario.load",
    "run": "placement.plan.solve",
    "scenario_file": "placement.world.bundled",
    "solve_stochastic": "placement.buildout.solve",
    "write_buildout": "placement.outputs.buildout",
    "write_results": "placement.outputs.writer",
}

__all__ = [
    "FacilityLocationResult",
    "LoadedScenario",
    "Plan",
    "build_buildout",
    "describe_scenarios",
    "facility_location",
    "load_scenario",
    "run",
    "scenario_file",
    "solve_stochastic",
    "write_buildout",
    "write_results",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """Import an exported name from its module on first use."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'placement' has no attribute '{name}'")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
