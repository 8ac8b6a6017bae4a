"""Speculative decoding and multi-token prediction: how many tokens a decode step emits, and what it costs.

A draft (an EAGLE head, a model's own MTP module) proposes ``k`` tokens; the target verifies them and the
next token in one step, so each decoding sequence carries ``k + 1`` tokens through the step's GEMMs (the
weights and the KV are still read once) and emits ``tau = (1 - a^(k+1)) / (1 - a)`` tokens on average for a
per-token acceptance ``a``. The draft passes add ``k x draft_cost_share`` of a step. Time per output token
(the ITL a user sees, as engines report TPOT under speculation) is the step over ``tau``; a sequence finishes
its answer in ``output_tokens / tau`` steps. At small batches, where a step is bound by reading weights,
that is nearly ``tau`` times the speed; at large batches the verified tokens make the step compute-bound and
speculation stops paying, which the node search sees because it times each batch with them.

The figures per model are ``data/serving/speculative.csv`` (cited or marked as estimates, ``data/SOURCES.md``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from placement._errors import InputError, Problem
from placement._validate import Column, missing_columns, numbers, raise_if, read_table, text
from placement.world.bundled import bundled_path

SPECULATIVE_CSV = bundled_path("serving", "speculative.csv")
"""The bundled speculation figures per model family."""
AUTO = "auto"
"""``speculative: auto``: the model's method from the table, used where it gives more goodput."""

_COLUMNS = (
    Column("method", help="a short method id (eagle3, mtp)"),
    Column("models", help="model ids of data/serving/models.csv, space-separated"),
    Column("draft_tokens", kind="number", low=1, high=16, whole=True, help="draft tokens per step"),
    Column("acceptance_rate", kind="number", low=0, high=0.999, help="per-token acceptance"),
    Column("draft_cost_share", kind="number", low=0, high=1, help="one draft pass over a decode step"),
    Column("basis", help="cited or estimate"),
    Column("source", help="where the figures come from"),
)


@dataclass(frozen=True)
class Speculation:
    """A speculative-decoding method on one model.

    Parameters
    ----------
    method : str
        Its id (``eagle3``, ``mtp``).
    draft_tokens : int
        Tokens drafted per step (``k``).
    acceptance_rate : float
        Probability a draft token is accepted given the ones before it (``a``).
    draft_cost_share : float
        Time of one draft pass as a share of a decode step of the target.
    basis, source : str
        ``cited`` or ``estimate``, and where the figures come from.
    """

    method: str
    draft_tokens: int
    acceptance_rate: float
    draft_cost_share: float
    basis: str = "estimate"
    source: str = ""

    @property
    def tokens_per_step(self) -> float:
        """Mean tokens a verify step emits per sequence, the bonus token included (``tau``)."""
        a, k = self.acceptance_rate, self.draft_tokens
        return (1.0 - a ** (k + 1)) / (1.0 - a)

    @property
    def verify_tokens(self) -> int:
        """Tokens each sequence carries through the step's GEMMs: the drafts and the next token."""
        return self.draft_tokens + 1

    @property
    def step_factor(self) -> float:
        """A step with its draft passes over one without them (the drafts run before the verify step)."""
        return 1.0 + self.draft_tokens * self.draft_cost_share


@lru_cache(maxsize=4)
def load_speculation(path: Path = SPECULATIVE_CSV) -> dict[tuple[str, str], Speculation]:
    """The table as ``{(model, method): Speculation}``; every bad cell gathered with its row and field."""
    table = read_table(path, fix="write a CSV with a header row: " + ",".join(c.name for c in _COLUMNS), comment="#")
    problems = missing_columns(table, _COLUMNS)
    raise_if(problems)
    method, models, basis, source = (text(table, _COLUMNS[i], problems) for i in (0, 1, 5, 6))
    drafts, accept, cost = (numbers(table, _COLUMNS[i], problems) for i in (2, 3, 4))
    raise_if(problems)
    out: dict[tuple[str, str], Speculation] = {}
    for k in range(len(table)):
        spec = Speculation(
            str(method.iloc[k]),
            int(drafts.iloc[k]),
            float(accept.iloc[k]),
            float(cost.iloc[k]),
            str(basis.iloc[k]),
            str(source.iloc[k]),
        )
        for model in str(models.iloc[k]).split():
            out[(model, spec.method)] = spec
    return out


def speculation_for(model: str, method: str | None) -> Speculation | None:
    """The speculation a request names: None when off; ``auto`` the model's first method in the table.

    Raises
    ------
    InputError
        A method the table does not give for the model (with the ones it does).
    """
    if method is None:
        return None
    table = load_speculation()
    offered = [m for (name, m) in table if name == model]
    if method == AUTO:
        return table[(model, offered[0])] if offered else None
    if (model, method) not in table:
        known = ", ".join(offered) if offered else f"none for {model}"
        fix = f"use one of: {known}, or auto (or add a row to {SPECULATIVE_CSV})"
        raise InputError([Problem("speculative", "", "method", f"{method!r} is not a speculation method of {model}", fix)])
    return table[(model, method)]
