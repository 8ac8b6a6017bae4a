"""Errors a user can act on: every problem in an input, gathered and reported together."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One problem found in one input.

    Parameters
    ----------
    source : str
        The file (or scenario key path root) the problem is in.
    where : str
        Row (``row 7``) or key path (``classes[0].ttft_p99_ms``) inside the source.
    field : str
        The column or key that breaks the rule ('' when the whole row or file is at fault).
    rule : str
        The rule that is broken, with the offending value.
    fix : str
        How to fix it.
    """

    source: str
    where: str
    field: str
    rule: str
    fix: str

    def __str__(self) -> str:
        """Render as one line: ``file, row 7, field 'lat': rule. Fix: ...``."""
        parts = [self.source]
        if self.where:
            parts.append(self.where)
        if self.field:
            parts.append(f"field '{self.field}'")
        return f"{', '.join(parts)}: {_clipped(self.rule)}. Fix: {self.fix}"


class PlacementError(Exception):
    """Base class for errors the command line reports without a traceback."""


class InputError(PlacementError):
    """One or more problems in a user's input, reported together.

    Parameters
    ----------
    problems : list of Problem
        Every problem found; never empty. A problem found twice (one file read for each of several classes)
        is kept once, in the order first found.
    """

    def __init__(self, problems: list[Problem]) -> None:
        if not problems:
            raise ValueError("InputError needs at least one problem")
        self.problems = list(dict.fromkeys(problems))
        count = len(self.problems)
        head = f"{count:,} problem{'s' if count != 1 else ''} in the input:"
        lines = [f"  - {p}" for p in self.problems[:SHOWN_PROBLEMS]]
        if count > SHOWN_PROBLEMS:
            lines.append(
                f"  ... and {count - SHOWN_PROBLEMS:,} more (the first {SHOWN_PROBLEMS} are shown: fix them and run again)"
            )
        super().__init__("\n".join([head, *lines]))

    def __reduce__(self) -> tuple[type[InputError], tuple[list[Problem]]]:
        """Pickled with its problems (a computation run in another process raises it again whole)."""
        return (InputError, (self.problems,))


SHOWN_PROBLEMS = 50
"""Problems an :class:`InputError`'s message lists; the rest are counted (every one stays in ``problems``)."""
RULE_CHARACTERS = 400
"""Longest rule a problem prints; a longer one (quoting a whole section) is cut, its length said, the fix kept."""


def _clipped(rule: str) -> str:
    if len(rule) <= RULE_CHARACTERS:
        return rule
    return f"{rule[:RULE_CHARACTERS]}... ({len(rule) - RULE_CHARACTERS:,} more characters)"


class InfeasibleError(PlacementError):
    """The scenario has no feasible placement; the message says which populations and why."""


class SolverError(PlacementError):
    """The solver failed or returned a solution that violates a constraint."""


def problems_of(check: Callable[[], object]) -> list[Problem]:
    """The problems a check raises as an :class:`InputError` (none: an empty list), to gather them with others.

    Parameters
    ----------
    check : callable
        Runs one check; its result is dropped.

    Returns
    -------
    list of Problem
        What it found.
    """
    try:
        check()
    except InputError as exc:
        return list(exc.problems)
    return []
