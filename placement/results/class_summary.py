"""The figures of one workload class in a plan: ``summary.json``'s ``classes`` entries as typed records."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from placement.economics.cost import cost_per_million_tokens_usd
from placement.profiles.build import ClassProfile
from placement.results.jsonio import finite_or_none, optional_float

__all__ = ["ClassSummary"]


@dataclass(frozen=True, kw_only=True)
class ClassSummary:
    """The figures of one workload class (one entry of ``summary.json``'s ``classes``).

    Parameters
    ----------
    name : str
        The class (JSON key ``class``).
    goodput_tok_s : float
        Daily mean goodput served inside the SLO. [tokens/s]
    cost_usd_per_h : float or None
        Its share of the cost: site costs split by node-equivalent usage, plus its own energy. [USD/h]
    cost_per_million_goodput_tokens_usd : float or None
        [USD/Mtok]; None when nothing is served.
    ttft_objective_ms, itl_objective_ms : float or None
        Its p99 objectives. [ms]
    p99_ttft_ms_max : float or None
        Worst p99 TTFT of its assignments. [ms]
    p99_itl_ms : float or None
        p99 inter-token latency a node achieves for it. [ms]
    goodput_tok_s_per_node : float or None
        Per-node goodput inside the objectives. [tokens/s]
    utilisation_cap : float or None
        Share of a node's goodput the plan may use.
    node_queue_ms, node_slot_wait_ms, node_prefill_ms, node_first_decode_ms : float or None
        The node's part of the p99 TTFT (JSON ``node_ttft_ms``: ``queue, slot_wait, prefill, first_decode``). [ms]
    cache_hit_rate : float or None
        Prefix-cache hit rate.
    goodput_from : str or None
        Where the per-node goodput comes from (``scenario`` or ``serving model``).
    serving_load_share : float or None
        Serving-model classes: the share of the node's capacity its goodput uses (1 - tail headroom).
    speculative : str or None
        Serving-model classes: the speculative-decoding method its nodes run (``""``: none).
    gco2e_per_million_goodput_tokens, water_l_per_million_goodput_tokens : float or None
        Its share of the plan's grid emissions and water (each site's split by the node-equivalents each class uses
        there, as its cost is) per million of its goodput tokens; None where unknown or in older folders.
    """

    name: str
    goodput_tok_s: float
    cost_usd_per_h: float | None = None
    cost_per_million_goodput_tokens_usd: float | None = None
    ttft_objective_ms: float | None = None
    p99_ttft_ms_max: float | None = None
    itl_objective_ms: float | None = None
    p99_itl_ms: float | None = None
    goodput_tok_s_per_node: float | None = None
    utilisation_cap: float | None = None
    node_queue_ms: float | None = None
    node_slot_wait_ms: float | None = None
    node_prefill_ms: float | None = None
    node_first_decode_ms: float | None = None
    cache_hit_rate: float | None = None
    goodput_from: str | None = None
    serving_load_share: float | None = None
    speculative: str | None = None
    gco2e_per_million_goodput_tokens: float | None = None
    water_l_per_million_goodput_tokens: float | None = None

    @classmethod
    def of_profile(
        cls, profile: ClassProfile, *, goodput_tok_s: float, cost_usd_per_h: float, p99_ttft_ms_max: float | None
    ) -> ClassSummary:
        """A class's figures from its serving profile and what the plan serves of it.

        Parameters
        ----------
        profile : ClassProfile
            The class's objectives and per-node serving figures.
        goodput_tok_s : float
            Served goodput. [tokens/s]
        cost_usd_per_h : float
            Its share of the cost. [USD/h]
        p99_ttft_ms_max : float or None
            Worst p99 TTFT of its assignments (None without any). [ms]

        Returns
        -------
        ClassSummary
        """
        return cls(
            name=profile.name,
            goodput_tok_s=goodput_tok_s,
            cost_usd_per_h=cost_usd_per_h,
            cost_per_million_goodput_tokens_usd=finite_or_none(float(cost_per_million_tokens_usd(cost_usd_per_h, goodput_tok_s))),
            ttft_objective_ms=profile.ttft_objective_ms,
            p99_ttft_ms_max=p99_ttft_ms_max,
            itl_objective_ms=profile.itl_objective_ms,
            p99_itl_ms=profile.itl_ms,
            goodput_tok_s_per_node=profile.goodput_tok_s_per_node,
            utilisation_cap=profile.utilisation_cap,
            node_queue_ms=profile.queue_ms,
            node_slot_wait_ms=profile.slot_wait_ms,
            node_prefill_ms=profile.prefill_ms,
            node_first_decode_ms=profile.first_decode_ms,
            cache_hit_rate=profile.cache_hit_rate,
            goodput_from=profile.source,
            serving_load_share=profile.serving_load_share,
            speculative=profile.speculative if profile.source != "scenario" else None,
        )

    def to_json_dict(self) -> dict[str, Any]:
        """The ``summary.json`` form (keys as they have always been)."""
        return {
            "class": self.name,
            "goodput_tok_s": self.goodput_tok_s,
            "cost_usd_per_h": self.cost_usd_per_h,
            "cost_per_million_goodput_tokens_usd": self.cost_per_million_goodput_tokens_usd,
            "ttft_objective_ms": self.ttft_objective_ms,
            "p99_ttft_ms_max": self.p99_ttft_ms_max,
            "itl_objective_ms": self.itl_objective_ms,
            "p99_itl_ms": self.p99_itl_ms,
            "goodput_tok_s_per_node": self.goodput_tok_s_per_node,
            "utilisation_cap": self.utilisation_cap,
            "node_ttft_ms": {
                "queue": self.node_queue_ms,
                "slot_wait": self.node_slot_wait_ms,
                "prefill": self.node_prefill_ms,
                "first_decode": self.node_first_decode_ms,
            },
            "cache_hit_rate": self.cache_hit_rate,
            "goodput_from": self.goodput_from,
            "serving_load_share": self.serving_load_share,
            "speculative": self.speculative,
            "gco2e_per_million_goodput_tokens": self.gco2e_per_million_goodput_tokens,
            "water_l_per_million_goodput_tokens": self.water_l_per_million_goodput_tokens,
        }

    @classmethod
    def from_json_dict(cls, data: Mapping[str, Any]) -> ClassSummary:
        """Read :meth:`to_json_dict`'s form back; figures added after the first version are optional."""
        node = data.get("node_ttft_ms") or {}
        goodput_from = data.get("goodput_from")
        return cls(
            name=str(data["class"]),
            goodput_tok_s=float(data["goodput_tok_s"]),
            cost_usd_per_h=optional_float(data.get("cost_usd_per_h")),
            cost_per_million_goodput_tokens_usd=optional_float(data.get("cost_per_million_goodput_tokens_usd")),
            ttft_objective_ms=optional_float(data.get("ttft_objective_ms")),
            p99_ttft_ms_max=optional_float(data.get("p99_ttft_ms_max")),
            itl_objective_ms=optional_float(data.get("itl_objective_ms")),
            p99_itl_ms=optional_float(data.get("p99_itl_ms")),
            goodput_tok_s_per_node=optional_float(data.get("goodput_tok_s_per_node")),
            utilisation_cap=optional_float(data.get("utilisation_cap")),
            node_queue_ms=optional_float(node.get("queue")),
            node_slot_wait_ms=optional_float(node.get("slot_wait")),
            node_prefill_ms=optional_float(node.get("prefill")),
            node_first_decode_ms=optional_float(node.get("first_decode")),
            cache_hit_rate=optional_float(data.get("cache_hit_rate")),
            goodput_from=None if goodput_from is None else str(goodput_from),
            serving_load_share=optional_float(data.get("serving_load_share")),
            speculative=None if data.get("speculative") is None else str(data.get("speculative")),
            gco2e_per_million_goodput_tokens=optional_float(data.get("gco2e_per_million_goodput_tokens")),
            water_l_per_million_goodput_tokens=optional_float(data.get("water_l_per_million_goodput_tokens")),
        )
