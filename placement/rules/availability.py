"""Which accelerators may be installed where: export controls and other rules, by country and year.

A bundled table (``data/rules/accelerator_availability.csv``; a scenario's ``rules.availability`` may name
another) has one row per rule: which parts, which countries (``*`` with exceptions for "everywhere but"),
from and until when, and its effect: ``barred`` (the fleet mix and the build-out buy none there) or
``licence`` (bought, and the report says a licence is needed). A rule is in force in a year it overlaps.
Every row is a simplification of a legal text and says what it simplified; the plan reports the rules
that barred a part at a site, so a planner's counsel can check them.

A single-year plan runs ``serving.accelerator`` at every site whose country no standing ``barred`` rule (in force,
no end date: the rules a plan built today obeys) covers for that part; where one does, the site runs the catalog
part the rules permit there that serves the classes cheapest (:func:`site_parts`; the choice is the caller's), and
where they permit none the site serves nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from placement._errors import InputError, Problem
from placement._validate import Column, Table, choice, missing_columns, raise_if, read_table, text
from placement.scenario.load import LoadedScenario
from placement.serving.hardware import bundled_accelerators, load_accelerators
from placement.world.bundled import bundled_path
from placement.world.regions import country_table

AVAILABILITY_CSV = bundled_path("rules", "accelerator_availability.csv")
"""The bundled rules (cited, each marked as a simplification; ``data/SOURCES.md``)."""
EFFECTS = ("barred", "licence")

_COLUMNS = (
    Column("rule_id", help="a short unique id"),
    Column("name", help="what the rule is"),
    Column("effect", help="barred or licence"),
    Column("accelerators", help="accelerator ids, space-separated"),
    Column("countries", help="ISO alpha-2 codes, space-separated, or *"),
    Column("except_countries", required=False, may_be_absent=True, help="codes taken out of *"),
    Column("from_date", help="YYYY-MM-DD"),
    Column("until_date", required=False, may_be_absent=True, help="YYYY-MM-DD, blank: still in force"),
    Column("simplification", help="what the row simplifies"),
    Column("source", help="the legal text"),
)


@dataclass(frozen=True)
class AvailabilityRule:
    """One rule on where a set of accelerators may be installed.

    Parameters
    ----------
    rule_id, name : str
        Its id and what it is.
    effect : {"barred", "licence"}
        Whether the parts may not be installed there, or only under a licence.
    accelerators : frozenset of str
        Accelerator ids it covers.
    countries : frozenset of str or None
        ISO alpha-2 codes it covers (None: every country but ``except_countries``).
    except_countries : frozenset of str
        Codes taken out of every country.
    from_date, until_date : datetime.date
        When it is in force (``until_date`` None: still).
    simplification, source : str
        What the row simplifies, and the legal text.
    """

    rule_id: str
    name: str
    effect: str
    accelerators: frozenset[str]
    countries: frozenset[str] | None
    except_countries: frozenset[str]
    from_date: date
    until_date: date | None
    simplification: str
    source: str

    def in_force(self, year: int) -> bool:
        """Whether the rule is in force at some time in ``year``."""
        return self.from_date <= date(year, 12, 31) and (self.until_date is None or self.until_date > date(year, 1, 1))

    def covers(self, country_code: str) -> bool:
        """Whether the rule applies in a country."""
        if self.countries is None:
            return country_code not in self.except_countries
        return country_code in self.countries


def load_availability(path: str | Path = AVAILABILITY_CSV) -> list[AvailabilityRule]:
    """Read and check an availability table.

    Parameters
    ----------
    path : str or Path
        The CSV (``#`` lines are comments).

    Returns
    -------
    list of AvailabilityRule
        In file order.

    Raises
    ------
    InputError
        Every bad cell, gathered: a missing column, an unknown effect, accelerator or country, a bad or
        backwards date, a repeated rule id, exceptions without ``*``.
    """
    table = read_table(path, fix="write a CSV with a header row: " + ",".join(c.name for c in _COLUMNS), comment="#")
    problems = missing_columns(table, _COLUMNS)
    raise_if(problems)
    effect = choice(table, "effect", EFFECTS, problems, fix="write barred or licence")
    for column in ("rule_id", "name", "accelerators", "countries", "simplification", "source"):
        text(table, next(c for c in _COLUMNS if c.name == column), problems)
    parts = set(load_accelerators())
    codes = set(country_table().index)
    rules: list[AvailabilityRule] = []
    seen: dict[str, int] = {}
    for k in range(len(table)):
        cell = {c.name: str(table.column(c.name).iloc[k]) for c in _COLUMNS}
        rule_id = cell["rule_id"]
        if rule_id in seen:
            rule = f"{rule_id!r} repeats {table.where(seen[rule_id])}"
            problems.append(table.problem(k, "rule_id", rule, "give each rule its own id"))
        seen.setdefault(rule_id, k)
        accelerators = frozenset(cell["accelerators"].split())
        for part in sorted(accelerators - parts):
            problems.append(table.problem(k, "accelerators", f"unknown accelerator {part!r}", f"use ids of {sorted(parts)}"))
        countries = None if cell["countries"] == "*" else frozenset(cell["countries"].split())
        excepted = frozenset(cell["except_countries"].split())
        for field, named in (("countries", countries or frozenset()), ("except_countries", excepted)):
            for code in sorted(named - codes):
                problems.append(table.problem(k, field, f"unknown country code {code!r}", "use ISO alpha-2 codes (GeoNames)"))
        if excepted and countries is not None:
            problems.append(table.problem(k, "except_countries", "exceptions need countries *", "write * in countries"))
        start, until = _date(table, k, "from_date", problems), _date(table, k, "until_date", problems, blank=True)
        if start is not None and until is not None and until <= start:
            problems.append(table.problem(k, "until_date", f"{until} is not after from_date {start}", "swap or fix the dates"))
        if start is not None:
            rules.append(
                AvailabilityRule(
                    rule_id,
                    cell["name"],
                    str(effect.iloc[k]),
                    accelerators,
                    countries,
                    excepted,
                    start,
                    until,
                    cell["simplification"],
                    cell["source"],
                )
            )
    raise_if(problems)
    return rules


def availability_rules(loaded: LoadedScenario) -> list[AvailabilityRule]:
    """The scenario's rules (``availability.file``, else the bundled table; none when ``enforce`` is false)."""
    section = loaded.scenario.availability
    if not section.enforce:
        return []
    rules = load_availability(loaded.resolve(section.file) if section.file is not None else AVAILABILITY_CSV)
    known = {rule.rule_id for rule in rules}
    unknown = [rule_id for rule_id in section.waive if rule_id not in known]
    if unknown:
        raise InputError(
            [
                Problem(
                    str(loaded.path),
                    f"availability.waive[{section.waive.index(r)}]",
                    "",
                    f"no rule {r!r} in the rules",
                    f"use ids of {sorted(known)}",
                )
                for r in unknown
            ]
        )
    return [rule for rule in rules if rule.rule_id not in section.waive]


def standing_bars(rules: list[AvailabilityRule], accelerator: str, country_codes: list[str]) -> dict[str, list[str]]:
    """Rules still in force (no end date) that bar ``accelerator``, each with the countries of ``country_codes`` it bars."""
    out: dict[str, list[str]] = {}
    for rule in rules:
        if rule.effect == "barred" and rule.until_date is None and accelerator in rule.accelerators:
            hit = sorted({c for c in country_codes if c and rule.covers(c)})
            if hit:
                out[rule.rule_id] = hit
    return out


@dataclass(frozen=True)
class SiteParts:
    """The part each site runs under the availability rules.

    Parameters
    ----------
    part : tuple of str
        Per site, the accelerator it runs (``''``: the rules permit no catalog part there; it serves nothing).
    barred_by : tuple of str
        Per site, the rule barring the scenario's part there (``''``: it runs the scenario's part).
    """

    part: tuple[str, ...]
    barred_by: tuple[str, ...]

    @property
    def moved(self) -> bool:
        """Whether any site runs another part than the scenario's, or none."""
        return any(self.barred_by)

    def runs(self, accelerator: str) -> NDArray[np.bool_]:
        """``(m,)`` the sites whose nodes are ``accelerator`` (not a site that runs nothing)."""
        return np.array([part == accelerator for part in self.part], dtype=bool)

    def runs_nothing(self) -> list[int]:
        """The sites where the rules permit no part."""
        return [j for j, part in enumerate(self.part) if not part]


def barring_rule(rules: Sequence[AvailabilityRule], part: str, country_code: str) -> str:
    """The first standing ``barred`` rule keeping ``part`` out of a country (``''``: none)."""
    if not country_code:
        return ""
    for rule in rules:
        if rule.effect == "barred" and rule.until_date is None and part in rule.accelerators and rule.covers(country_code):
            return rule.rule_id
    return ""


def permitted_parts(rules: Sequence[AvailabilityRule], country_code: str) -> list[str]:
    """The catalog parts no standing ``barred`` rule keeps out of a country, in catalog order."""
    return [part for part in bundled_accelerators() if not barring_rule(rules, part, country_code)]


def site_parts(
    rules: Sequence[AvailabilityRule],
    accelerator: str,
    country_codes: Sequence[str],
    *,
    choose: Callable[[list[str]], str],
) -> SiteParts:
    """The part each site runs: ``accelerator`` where no standing rule bars it, else the permitted part ``choose`` picks.

    Parameters
    ----------
    rules : sequence of AvailabilityRule
        The availability rules in force (empty when ``availability.enforce`` is false).
    accelerator : str
        The scenario's part (``serving.accelerator``).
    country_codes : sequence of str
        Each site's ISO alpha-2 code (``''`` where unknown: no rule covers it).
    choose : callable
        Picks one of two or more permitted parts (called once per set of candidates).

    Returns
    -------
    SiteParts
        Per site, its part and the rule that moved it off the scenario's.
    """
    picked: dict[str, str] = {}
    parts, barred_by = [], []
    for code in country_codes:
        rule = barring_rule(rules, accelerator, code)
        barred_by.append(rule)
        if not rule:
            parts.append(accelerator)
            continue
        if code not in picked:
            candidates = permitted_parts(rules, code)
            picked[code] = "" if not candidates else candidates[0] if len(candidates) == 1 else choose(candidates)
        parts.append(picked[code])
    return SiteParts(tuple(parts), tuple(barred_by))


def _date(table: Table, k: int, column: str, problems: list[Problem], *, blank: bool = False) -> date | None:
    value = str(table.column(column).iloc[k])
    if value == "" and blank:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        problems.append(table.problem(k, column, f"{value!r} is not a date", "write YYYY-MM-DD"))
        return None


def barred_mask(
    rules: list[AvailabilityRule], country_codes: list[str], accelerators: list[str], years: list[int]
) -> NDArray[np.bool_]:
    """``(M, A, Y)`` where a ``barred`` rule keeps an accelerator out of a site's country in a year.

    Parameters
    ----------
    rules : list of AvailabilityRule
        The rules (:func:`load_availability`).
    country_codes : list of str
        ISO alpha-2 code of each site ('' where unknown: no rule covers it).
    accelerators, years : list
        Accelerator ids and years.

    Returns
    -------
    numpy.ndarray of bool
    """
    out = np.zeros((len(country_codes), len(accelerators), len(years)), dtype=bool)
    for rule in rules:
        if rule.effect != "barred":
            continue
        sites = np.array([bool(code) and rule.covers(code) for code in country_codes], dtype=bool)
        parts = np.array([a in rule.accelerators for a in accelerators], dtype=bool)
        when = np.array([rule.in_force(y) for y in years], dtype=bool)
        out |= sites[:, None, None] & parts[None, :, None] & when[None, None, :]
    return out


def rules_at(
    rules: list[AvailabilityRule], country_code: str, accelerator: str, year: int, effect: str = "barred"
) -> list[AvailabilityRule]:
    """The rules of one effect in force for an accelerator in a country in a year."""
    return [
        r for r in rules if r.effect == effect and accelerator in r.accelerators and r.covers(country_code) and r.in_force(year)
    ]


__all__ = [
    "AVAILABILITY_CSV",
    "AvailabilityRule",
    "availability_rules",
    "barred_mask",
    "load_availability",
    "rules_at",
    "standing_bars",
]
