"""Check an N+1 results folder from its files alone: every loss re-routed in full, inside objectives and nodes.

Reads ``sites.csv``, ``assignments.csv``, ``failover.csv``, ``failover_sites.csv`` and ``failover_scenarios.csv``
(nothing of the package) and checks, for every open site that serves goodput and every fault domain listed:

- the loss has a row in ``failover_scenarios.csv``;
- for every protected (population, class, slice) it touches, the goodput served after the loss adds up to what
  was served before, at sites that did not fail (nor prefilled at one, with cross-metro prefill), each inside its
  TTFT objective;
- every surviving site that takes moved load needs at most its nodes in every slice;
- what ``failover_scenarios.csv`` calls unprotected is the goodput at (or prefilled at) the failed sites of the
  population-class pairs that ``failover.csv`` does not re-route.

Usage: ``python scripts/check_failover.py RESULTS`` (exit 1 and one line per broken rule).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

REL_TOL = 1e-6


def check(folder: Path) -> list[str]:
    """Every broken rule of the folder's failover files, one line each."""
    sites = pd.read_csv(folder / "sites.csv", keep_default_na=False)
    assignments = pd.read_csv(folder / "assignments.csv", keep_default_na=False)
    rows = pd.read_csv(folder / "failover.csv", keep_default_na=False)
    capacity = pd.read_csv(folder / "failover_sites.csv", keep_default_na=False)
    scenarios = pd.read_csv(folder / "failover_scenarios.csv", keep_default_na=False)
    problems: list[str] = []
    is_open = sites["open"].astype(str).str.lower() == "true"
    serving = set(sites.loc[is_open & (sites["goodput_tok_s"] > 0), "site_id"])
    missing = serving - set(scenarios.loc[scenarios["failed_kind"] == "site", "failed"])
    if missing:
        problems.append(f"{len(missing)} open sites have no failure scenario: {sorted(missing)[:5]}")
    failed_sites = {r.failed: set(str(r.site_ids).split(";")) for r in scenarios.itertuples()}
    inside = rows["ttft_p99_ms"] <= rows["ttft_objective_ms"] + 1e-9
    if not inside.all():
        problems.append(f"{int((~inside).sum())} failover rows are outside their TTFT objective")
    prefill = rows["prefill_site_id"] if "prefill_site_id" in rows else pd.Series([""] * len(rows))
    on_failed = [
        s in failed_sites.get(f, set()) or p in failed_sites.get(f, set())
        for f, s, p in zip(rows["failed"], rows["serving_site_id"], prefill, strict=True)
    ]
    if any(on_failed):
        problems.append(f"{sum(on_failed)} failover rows are served by a site that failed")
    protected = rows[rows["protected"].astype(str).str.lower() == "true"]
    keys = ["failed", "population_id", "class", "slice"]
    groups = protected.groupby(keys).agg(goodput=("goodput_tok_s", "sum"), demand=("demand_tok_s", "first"))
    short = (groups["goodput"] - groups["demand"]).abs() > REL_TOL * groups["demand"].clip(lower=1.0)
    if short.any():
        problems.append(f"{int(short.sum())} protected (loss, population, class, slice) are not re-routed in full")
    over = capacity["nodes_needed"] > capacity["nodes"]
    if over.any():
        problems.append(f"{int(over.sum())} (loss, site, slice) need more nodes than the site has")
    for r in scenarios.itertuples():
        lost = assignments["site_id"].isin(failed_sites[r.failed])
        if "prefill_site_id" in assignments:  # a cross-metro row is lost with its prefill site too
            lost |= assignments["prefill_site_id"].isin(failed_sites[r.failed])
        at_failed = assignments[lost]
        moved = set(zip(*[rows.loc[rows["failed"] == r.failed, c] for c in ("population_id", "class")], strict=True))
        kept = [(p, c) not in moved for p, c in zip(at_failed["population_id"], at_failed["class"], strict=True)]
        left = at_failed[pd.Series(kept, index=at_failed.index, dtype=bool)]  # a list, empty, would select columns
        expected = float(left["goodput_tok_s"].sum())
        if abs(expected - float(r.unprotected_tok_s)) > 1e-4 * max(1.0, float(r.served_tok_s)):
            problems.append(f"loss of {r.failed}: unprotected {r.unprotected_tok_s:.1f} tok/s, not re-routed {expected:.1f}")
    return problems


def main(argv: list[str]) -> int:
    """Check the folder given and print what is broken."""
    if len(argv) != 1:
        print(__doc__)
        return 2
    folder = Path(argv[0])
    problems = check(folder)
    for line in problems:
        print(line)
    scenarios = pd.read_csv(folder / "failover_scenarios.csv", keep_default_na=False)
    capacity = pd.read_csv(folder / "failover_sites.csv", keep_default_na=False)
    print(f"{'FAILED' if problems else 'ok'}: {len(scenarios)} losses, {len(capacity)} (loss, site, slice) capacity rows checked")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
