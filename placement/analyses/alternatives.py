"""Near-optimal alternatives (modelling to generate alternatives): other designs that cost at most ``slack`` more.

From the optimum (the ordinary plan), each alternative is the placement model with its cost held within
``(1 + slack)`` of the optimum's and another objective, a *direction* (:mod:`placement.optimize.steer`):

- ``spread`` (the default, Hop-Skip-Jump): the least MW at sites that the optimum and the alternatives before opened,
  each site weighted by how many of them opened it (one node's MW for opening it, plus its nodes' MW), so each new
  design moves its capacity as far from the ones before as the budget allows;
- ``fewest-sites`` and ``most-sites``: the fewest (most) sites open (each open site holding a node);
- ``least-power-in:REGION``: the least MW in a region (a continent, ISO country code or grid region of the catalog);
- ``least-emissions``: the least grid emissions a year.

With optional serving (the plan minimises $/M goodput), or when the optimum leaves demand unserved (a world without
the power to serve it all), each alternative serves at least the optimum's goodput (within :data:`SERVED_TOLERANCE`),
so its $/M is within the slack too and none is cheaper by serving less. Each design
is verified against every constraint, the cost row included, and tabulated as an ordinary plan.

The alternatives are solved on the optimum's instance: its KV tiers and cache warm-up as the optimum's solve left
them (an alternative is not taken through tier or cache rounds of its own).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np

from placement._types import BoolArray, FloatArray
from placement.analyses.frontier import NO_CAP_PER_YEAR
from placement.instance.build import build_instance
from placement.instance.record import Instance
from placement.optimize.problem import PlacementInput, PlacementSolution
from placement.optimize.steer import Steered, Weights, cost_cap, solve_steered
from placement.plan.record import Plan
from placement.plan.solve import assemble_plan, solve_instance
from placement.progress import Progress, quiet
from placement.rules.resources import region_sites
from placement.scenario.load import LoadedScenario

MAX_ALTERNATIVES = 20
"""Most alternatives one run takes (each is two MILPs on the whole model)."""
MAX_SLACK = 1.0
"""The loosest slack: designs up to twice the optimum's cost."""
SERVED_TOLERANCE = 1e-9
"""With optional serving, an alternative serves at least the optimum's goodput less this share."""
UNSERVED_TOL = 1e-9
"""A share of a commodity's demand the optimum leaves unserved above this: alternatives may leave some unserved too
(serving at least what the optimum serves)."""

KINDS = ("spread", "fewest-sites", "most-sites", "least-power-in", "least-emissions")
"""The directions an alternative may take."""


@dataclass(frozen=True)
class Direction:
    """Where an alternative is steered.

    Parameters
    ----------
    kind : str
        One of :data:`KINDS`.
    region : str, optional
        The region of ``least-power-in``.
    """

    kind: str
    region: str | None = None

    @property
    def label(self) -> str:
        """As written on the command line (``least-power-in:Europe``)."""
        return self.kind if self.region is None else f"{self.kind}:{self.region}"


SPREAD = Direction("spread")


def parse_direction(text: str) -> Direction:
    """A direction from its text (``fewest-sites``, ``least-power-in:Europe``, ...).

    Raises
    ------
    ValueError
        An unknown direction, or ``least-power-in`` without its region.
    """
    kind, _, region = text.strip().partition(":")
    kind = kind.strip().lower()
    if kind not in KINDS:
        raise ValueError(
            f"unknown direction {text!r}: write one of {', '.join(KINDS[:3])}, least-power-in:REGION, least-emissions"
        )
    if kind == "least-power-in":
        if not region.strip():
            raise ValueError("least-power-in needs a region: least-power-in:REGION (a continent, country code or grid_region)")
        return Direction(kind, region.strip())
    if region:
        raise ValueError(f"direction {kind} takes no region (got {text!r})")
    return Direction(kind)


def check_options(slack: float, count: int, directions: Sequence[Direction]) -> None:
    """Raise ValueError unless the slack is in (0, :data:`MAX_SLACK`] and the count in 1 .. :data:`MAX_ALTERNATIVES`.

    The count is at least the number of hand-chosen directions (one alternative each).
    """
    if not 0 < slack <= MAX_SLACK:
        raise ValueError(
            f"the slack is a share of the optimum's cost above 0 and at most {MAX_SLACK:g} (got {slack:g}), e.g. 0.02 for 2 %"
        )
    if not 1 <= count <= MAX_ALTERNATIVES:
        raise ValueError(f"an alternatives run takes 1 to {MAX_ALTERNATIVES} alternatives (got {count})")
    if len(directions) > count:
        raise ValueError(f"{len(directions)} directions need at least as many alternatives: raise the count to {len(directions)}")


def design_folder(index: int) -> str:
    """The results folder of design ``index`` (0: the optimum)."""
    return "optimum" if index == 0 else f"alternative_{index:02d}"


@dataclass(frozen=True)
class Alternative:
    """One design: the optimum (index 0) or an alternative.

    Parameters
    ----------
    index : int
        0 for the optimum, then 1, 2, ...
    direction : str
        Its direction's label (``optimum`` for the optimum).
    plan : Plan or None
        Its plan (None when no verified design was found).
    status : str
        The solver's status (``optimal``, ``feasible``: stopped by its limit with a design) or why there is none.
    """

    index: int
    direction: str
    plan: Plan | None
    status: str

    @property
    def folder(self) -> str:
        """The results folder's name under the run's folder."""
        return design_folder(self.index)


def _site_mw_per_node(instance: Instance) -> tuple[FloatArray, FloatArray]:
    """``(m,)`` MW of an open site's warm-up nodes and of one node."""
    data = instance.inputs
    warmup = instance.cache_warmup_nodes if len(instance.cache_warmup_nodes) == data.n_sites else np.zeros(data.n_sites)
    return warmup * data.site_node_mw, data.site_node_mw


def direction_weights(instance: Instance, direction: Direction, earlier: Sequence[BoolArray]) -> Weights:
    """The objective of a direction on the instance's columns.

    Parameters
    ----------
    instance : Instance
        The optimum's instance.
    direction : Direction
        Where to steer.
    earlier : sequence of numpy.ndarray of bool
        ``(m,)`` open sites of the optimum and of each alternative before (``spread`` avoids them).

    Returns
    -------
    Weights
        The direction's weights.

    Raises
    ------
    ValueError
        A region that names no site, or ``least-emissions`` without a carbon figure in the model.
    """
    data = instance.inputs
    m, no_pairs = data.n_sites, np.zeros(len(data.pair_site))
    warmup_mw, node_mw = _site_mw_per_node(instance)
    if direction.kind == "spread":
        used = np.sum(np.asarray(earlier, dtype=float), axis=0) if len(earlier) else np.zeros(m)
        return Weights(used * (warmup_mw + node_mw), used * node_mw, no_pairs)
    if direction.kind in ("fewest-sites", "most-sites"):
        sign = 1.0 if direction.kind == "fewest-sites" else -1.0
        return Weights(np.full(m, sign), np.zeros(m), no_pairs, occupied=direction.kind == "most-sites")
    if direction.kind == "least-power-in":
        assert direction.region is not None
        inside = region_sites(instance.sites, direction.region).astype(float)
        if not inside.any():
            raise ValueError(
                f"least-power-in:{direction.region} names no site: write a continent, an ISO alpha-2 country code or a "
                "grid_region of the catalog"
            )
        return Weights(inside * warmup_mw, inside * node_mw, no_pairs)
    carbon = next((cap for cap in data.caps if cap.name == "carbon" and cap.sites is None), None)
    if carbon is None:
        raise ValueError("least-emissions needs the plan's carbon figure: give every site carbon_intensity_g_per_kwh")
    return Weights(carbon.site_fixed_per_h, carbon.site_node_per_h, carbon.pair_per_h)


@dataclass(frozen=True)
class AlternativesStart:
    """The optimum and what its alternatives are solved from.

    Parameters
    ----------
    optimum : Alternative
        The ordinary plan (index 0).
    slack : float
        The alternatives cost at most this share more than the optimum.
    near_optimal : PlacementInput
        The optimum's arrays with the cost row at ``(1 + slack)`` times its cost (the last of their caps).
    optional : bool
        Demand may go unserved: the scenario's serving is optional, or the optimum leaves some unserved (a world
        without the power to serve it all, ``policy.unreachable: report``).
    min_served_tok_s : float
        With ``optional``, the least goodput an alternative serves (0 otherwise). [tokens/s]
    """

    optimum: Alternative
    slack: float
    near_optimal: PlacementInput
    optional: bool
    min_served_tok_s: float

    @property
    def optimum_usd_per_h(self) -> float:
        """The optimum's cost in the model's terms. [USD/h]"""
        return self.near_optimal.caps[-1].limit_per_h / (1 + self.slack)

    @property
    def plan(self) -> Plan:
        """The optimum's plan."""
        assert self.optimum.plan is not None
        return self.optimum.plan

    def solve(
        self,
        index: int,
        direction: Direction,
        earlier: Sequence[BoolArray],
        progress: Progress = quiet,
        *,
        starts: Sequence[PlacementSolution] = (),
    ) -> Alternative:
        """Alternative ``index`` steered in ``direction``.

        ``earlier`` holds the open sites of the designs before it (which ``spread`` avoids); ``starts`` the designs
        before it at hand, which may start the solver beside the optimum.
        """
        instance = self.plan.instance
        progress(f"alternative {index}: {direction.label}, at most {self.slack:.1%} dearer than the optimum")
        weights = direction_weights(instance, direction, earlier)
        options = instance.facts.solver.options()
        steered = solve_steered(self.near_optimal, weights, [self.plan.solution, *starts], options, optional=self.optional,
                                min_served_tok_s=self.min_served_tok_s)  # fmt: skip
        repeats = steered.solution is not None and any(np.array_equal(steered.solution.open, e) for e in earlier)
        if repeats and direction.kind == "spread":  # led back to a design before it: again, barred from every one
            progress(f"alternative {index}: the same sites as a design before it; searching again, those designs barred")
            again = solve_steered(self.near_optimal, weights, [], options, optional=self.optional,
                                  min_served_tok_s=self.min_served_tok_s, avoid=earlier)  # fmt: skip
            steered = again if again.solution is not None else steered
        return Alternative(index, direction.label, self._plan(index, direction, steered), _status(steered))

    def _plan(self, index: int, direction: Direction, steered: Steered) -> Plan | None:
        if steered.solution is None:
            return None
        optimum = self.optimum_usd_per_h
        note = (
            f"near-optimal alternative {index} ({direction.label}): {steered.solution.objective_usd_per_h:,.2f} $/h, "
            f"{steered.solution.objective_usd_per_h / optimum - 1:+.2%} against the optimum's {optimum:,.2f} (slack "
            f"{self.slack:.1%}); direction value {steered.direction_value:,.6g}"
            + ("; searched from a design before it (the solver's own search found none in time)" if steered.from_start else "")
        )
        return assemble_plan(self.plan.instance, steered.solution, _status(steered), [note])


def _status(steered: Steered) -> str:
    """``optimal`` or ``feasible`` (stopped by a limit) with a design; otherwise why there is none."""
    if steered.solution is not None:
        return str(steered.report.status.value)
    return "; ".join(steered.problems)


def alternatives_start(loaded: LoadedScenario, *, slack: float = 0.02, progress: Progress = quiet,
                       directions: Sequence[Direction] = ()) -> AlternativesStart:  # fmt: skip
    """Solve the optimum and lay out the near-optimal set around it.

    Parameters
    ----------
    loaded : LoadedScenario
        A single-year scenario.
    slack : float, optional
        Alternatives cost at most this share more than the optimum.
    progress : callable, optional
        Receives a line per step.
    directions : sequence of Direction, optional
        The hand-chosen directions (``least-emissions`` puts the carbon figure in the model, as a cap that never
        binds).

    Returns
    -------
    AlternativesStart
        The optimum and the near-optimal set's arrays.

    Raises
    ------
    ValueError
        A build-out scenario.
    """
    scenario = loaded.scenario
    if scenario.is_buildout:
        raise ValueError(
            "alternatives are drawn around a single-year plan: remove horizon and serving.accelerators to explore the "
            "first year's plan"
        )
    if any(d.kind == "least-emissions" for d in directions) and scenario.objective.carbon_cap_t_per_year is None:
        objective = scenario.objective.model_copy(update={"carbon_cap_t_per_year": NO_CAP_PER_YEAR})
        loaded = LoadedScenario(scenario=scenario.model_copy(update={"objective": objective}), path=loaded.path)
    instance = build_instance(loaded, progress=progress)
    for direction in directions:  # a region naming no site is refused before the optimum is solved
        direction_weights(instance, direction, [])
    plan = solve_instance(instance, progress=progress, price_caps=False)
    data = plan.instance.inputs
    solution = plan.solution
    cost = data.cost_usd_per_h(solution.open, solution.nodes, solution.pair_share)
    budget = cost * (1 + slack)
    optional = plan.instance.facts.policy.serving == "optional" or bool((solution.unserved_share > UNSERVED_TOL).any())
    served = solution.served_mean_tok_s(data) * (1 - SERVED_TOLERANCE) if optional else 0.0
    progress(f"optimum: {cost:,.2f} $/h; alternatives at most {budget:,.2f} $/h ({slack:.1%} more)")
    near = replace(data, caps=(*data.caps, cost_cap(data, budget)))
    return AlternativesStart(Alternative(0, "optimum", plan, str(plan.summary.status)), slack, near, optional, served)


def plan_alternatives(count: int, directions: Sequence[Direction]) -> list[Direction]:
    """Each alternative's direction: the hand-chosen ones first, then ``spread`` up to ``count``."""
    return [*directions, *[SPREAD] * (count - len(directions))]


def near_optimal_alternatives(
    loaded: LoadedScenario,
    *,
    slack: float = 0.02,
    count: int = 5,
    directions: Sequence[Direction] = (),
    progress: Progress = quiet,
) -> Iterator[Alternative]:
    """The optimum, then each alternative in turn (each can be written and let go).

    Parameters
    ----------
    loaded : LoadedScenario
        The scenario.
    slack : float, optional
        Alternatives cost at most this share more than the optimum.
    count : int, optional
        Alternatives, after the optimum.
    directions : sequence of Direction, optional
        Hand-chosen directions, one alternative each, before the ``spread`` ones.
    progress : callable, optional
        Receives a line per step.

    Yields
    ------
    Alternative
        The optimum (index 0), then alternatives 1 .. count.
    """
    check_options(slack, count, directions)
    start = alternatives_start(loaded, slack=slack, progress=progress, directions=directions)
    yield start.optimum
    earlier = [start.plan.solution.open]
    solved: list[PlacementSolution] = []
    for index, direction in enumerate(plan_alternatives(count, directions), start=1):
        alternative = start.solve(index, direction, earlier, progress, starts=solved)
        if alternative.plan is not None:
            earlier.append(alternative.plan.solution.open)
            solved.append(alternative.plan.solution)
        yield alternative
