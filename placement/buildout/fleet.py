"""The accelerators a build-out may buy: goodput per class from the serving model, power and price by year.

Each accelerator's per-node goodput and node-side TTFT come from the same serving model as a
single-year run (:func:`placement.profiles.build.class_profiles` on the ``serving`` section with that accelerator);
node power and price come from the accelerator catalog unless the horizon gives them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from placement._errors import InputError, Problem
from placement._types import FloatArray
from placement.profiles.build import (
    ClassProfile,
    catalog_node_capex_usd,
    node_kw,
    node_problems,
    served_class_profiles,
    serving_request,
)
from placement.scenario.classes import WorkloadClass
from placement.scenario.horizon import AcceleratorOffer, HorizonSection
from placement.scenario.sections import ServingSection
from placement.serving.hardware import get_model
from placement.serving.request import serve


@dataclass(frozen=True)
class Fleet:
    """Accelerators on offer over the horizon.

    Parameters
    ----------
    ids : list of str
        Accelerator ids.
    profiles : list of list of ClassProfile
        ``profiles[a][k]``: class ``k`` on accelerator ``a``.
    node_kw : numpy.ndarray
        ``(A,)`` IT power of one node. [kW]
    node_capex_usd : numpy.ndarray
        ``(A, Y)`` node price in each year (nan where not on offer). [USD]
    offered : numpy.ndarray of bool
        ``(A, Y)`` whether it can be bought in each year.
    cannot_serve : list of str
        Each accelerator-class pair it cannot serve inside the class's objectives, and why (goodput 0 there).
    """

    ids: list[str]
    profiles: list[list[ClassProfile]]
    node_kw: FloatArray
    node_capex_usd: FloatArray
    offered: NDArray[np.bool_]
    cannot_serve: tuple[str, ...] = ()

    @property
    def goodput_tok_s(self) -> FloatArray:
        """``(K, A)`` goodput of one node per class, utilisation cap applied. [tokens/s]"""
        return np.array([[p.goodput_tok_s_per_node * p.utilisation_cap for p in per_class] for per_class in self.profiles]).T

    def worst_profiles(self, among: NDArray[np.bool_] | None = None) -> list[ClassProfile]:
        """Per class, the longest node-side TTFT of the parts that serve it (pairs must suit every one a site may run).

        Parameters
        ----------
        among : numpy.ndarray of bool, optional
            ``(A,)`` the accelerators to take the worst of (None: all).
        """
        chosen = [p for a, p in enumerate(self.profiles) if among is None or bool(among[a])]
        worst = []
        for k in range(len(self.profiles[0])):
            serving = [per_class[k] for per_class in chosen if per_class[k].goodput_tok_s_per_node > 0]
            # none of them serves the class: its (infinite) node TTFT allows no pair
            candidates = serving or [per_class[k] for per_class in chosen]
            worst.append(max(candidates, key=lambda p: p.fixed_ttft_ms))
        return worst


def with_model(serving: ServingSection, model: str) -> ServingSection:
    """The ``serving`` section serving another model on the same node."""
    return serving.model_copy(update={"model": model})


def model_goodput_tok_s(
    classes: list[WorkloadClass], serving: ServingSection, fleet: Fleet, offered: list[AcceleratorOffer], model: str
) -> FloatArray:
    """``(K, A)`` goodput of one node per class and accelerator serving ``model`` (0 where it cannot serve a class).

    Given-goodput classes keep their given goodput; the node-side TTFT stays inside each class's
    ``serving_ttft_budget_ms`` (the serving model's constraint), so the pairs allowed do not change.

    Raises
    ------
    InputError
        If the model is not in the serving catalog.
    """
    get_model(model)
    table = fleet.goodput_tok_s.copy()
    for a, offer in enumerate(offered):
        variant = with_model(with_accelerator(serving, offer), model)
        for k, workload in enumerate(classes):
            if not workload.given:
                table[k, a] = serve(serving_request(variant, workload)).goodput_tok_s
    return table


def offers(horizon: HorizonSection | None, serving: ServingSection) -> list[AcceleratorOffer]:
    """The horizon's accelerators; else ``serving.accelerators``; else ``serving.accelerator``, every year."""
    if horizon is not None and horizon.accelerators:
        return list(horizon.accelerators)
    return [AcceleratorOffer(id=a) for a in (serving.accelerators or [serving.accelerator])]


def with_accelerator(serving: ServingSection, offer: AcceleratorOffer) -> ServingSection:
    """The ``serving`` section with its node replaced by the offered accelerator (the catalog's kW unless the offer gives it)."""
    update: dict[str, object] = {"accelerator": offer.id, "node_kw": offer.node_kw}
    if offer.precision is not None:
        update["precision"] = offer.precision
    return serving.model_copy(update=update)


def _price_path(offer: AcceleratorOffer, years: list[int], catalog_usd: float) -> tuple[FloatArray, NDArray[np.bool_]]:
    first = years[0] if offer.first_year is None else offer.first_year
    last = years[-1] if offer.last_year is None else offer.last_year
    year = np.array(years)
    start = offer.node_capex_usd if offer.node_capex_usd is not None else catalog_usd
    price = start * (1.0 + offer.price_change_per_year) ** np.maximum(year - first, 0)
    on = (year >= first) & (year <= last)
    return np.where(on, price, np.nan), on


def _check_years(horizon: HorizonSection | None, offered: list[AcceleratorOffer], years: list[int], source: str) -> None:
    problems = [
        Problem(
            source,
            f"horizon.accelerators[{a}]",
            "first_year/last_year",
            f"{o.id} is on offer in none of {years}",
            "overlap the horizon",
        )
        for a, o in enumerate(offered)
        if (o.first_year or years[0]) > years[-1] or (o.last_year or years[-1]) < years[0]
    ]
    if problems and horizon is not None:
        raise InputError(problems)


def _offer_key(horizon: HorizonSection | None, serving: ServingSection, a: int) -> str:
    """The scenario key an accelerator on offer was written at."""
    if horizon is not None and horizon.accelerators:
        return f"horizon.accelerators[{a}].id"
    return f"serving.accelerators[{a}]" if serving.accelerators else "serving.accelerator"


def _repeated_offers(
    horizon: HorizonSection | None, serving: ServingSection, offered: list[AcceleratorOffer], source: str
) -> list[Problem]:
    """An accelerator offered twice (the second would buy into an empty column)."""
    first: dict[str, int] = {}
    problems = []
    for a, offer in enumerate(offered):
        if offer.id in first:
            where = _offer_key(horizon, serving, a)
            rule = f"accelerator {offer.id!r} is listed twice (first at {_offer_key(horizon, serving, first[offer.id])})"
            problems.append(Problem(source, where, "", rule, "list each accelerator once"))
        else:
            first[offer.id] = a
    return problems


def build_fleet(
    classes: list[WorkloadClass], serving: ServingSection, horizon: HorizonSection | None, years: list[int], *, source: str
) -> Fleet:
    """Goodput, power and price of every accelerator on offer.

    Parameters
    ----------
    classes : list of WorkloadClass
        The scenario's ``classes``.
    serving : ServingSection
        The scenario's ``serving`` section (each accelerator on offer replaces its node).
    horizon : HorizonSection or None
        The scenario's ``horizon`` (its accelerators on offer; none: ``serving.accelerators``).
    years : list of int
        The planning years.
    source : str
        The scenario file, for error messages.

    Returns
    -------
    Fleet
        In the order the scenario lists them.

    Raises
    ------
    InputError
        Every accelerator the catalog does not know or that serves a class not at all, gathered.
    """
    offered = offers(horizon, serving)
    _check_years(horizon, offered, years, source)
    problems = _repeated_offers(horizon, serving, offered, source)
    served: list[list[ClassProfile | None]] = []
    why: list[list[Problem | None]] = []
    kws, prices, ons = [], [], []
    for a, offer in enumerate(offered):
        variant = with_accelerator(serving, offer)
        unknown = node_problems(variant, source=source, accelerator_key=_offer_key(horizon, serving, a))
        if unknown and not all(workload.given for workload in classes):
            problems += [_about(offer, p) for p in unknown]
            continue
        try:
            per_class, reasons = served_class_profiles(classes, variant, source=source)
        except InputError as exc:
            problems += [_about(offer, p) for p in exc.problems]
            continue
        served.append(per_class)
        why.append(reasons)
        kws.append(node_kw(variant))
        price, on = _price_path(offer, years, catalog_node_capex_usd(variant))
        prices.append(price)
        ons.append(on)
    if problems:
        raise InputError(problems)
    profiles = _fill_unserved(served, why, offered)
    cannot = [
        f"{offer.id} cannot serve {classes[k].name}: {reason.rule}"
        for offer, reasons in zip(offered, why, strict=True)
        for k, reason in enumerate(reasons)
        if reason is not None
    ]
    return Fleet([o.id for o in offered], profiles, np.array(kws), np.array(prices), np.array(ons), tuple(cannot))


def _about(offer: AcceleratorOffer, problem: Problem) -> Problem:
    return Problem(problem.source, problem.where, problem.field, f"accelerator {offer.id}: {problem.rule}", problem.fix)


def _fill_unserved(
    served: list[list[ClassProfile | None]], why: list[list[Problem | None]], offered: list[AcceleratorOffer]
) -> list[list[ClassProfile]]:
    """A class an accelerator cannot serve gets goodput 0 there (and no say in which pairs are allowed).

    Raises
    ------
    InputError
        For a class no accelerator of the fleet can serve, with each accelerator's reason.
    """
    problems: list[Problem] = []
    out = [list(per_class) for per_class in served]
    for k in range(len(served[0]) if served else 0):
        serving = [profile for per_class in served if (profile := per_class[k]) is not None]
        if not serving:
            for offer, reasons in zip(offered, why, strict=True):
                reason = reasons[k]
                if reason is not None:
                    problems.append(_about(offer, reason))
            continue
        stand_in = serving[0]
        for per_class in out:
            if per_class[k] is None:
                per_class[k] = replace(stand_in, goodput_tok_s_per_node=0.0, prefill_ms=math.inf)
    if problems:
        raise InputError(problems)
    return [[p for p in per_class if p is not None] for per_class in out]
