"""A workload class of a scenario: its latency objectives, its TTFT budget and where its per-node goodput comes from."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from placement.scenario._section import Section


class WorkloadClass(Section):
    """A workload class: its latency objectives, TTFT budget and per-node goodput.

    Per-node goodput is either given (``goodput_tok_s_per_node`` with ``queue_ms``, ``prefill_ms``
    and ``first_decode_ms``) or computed by the serving model from ``serving`` and the class's
    token counts, inside ``serving_ttft_budget_ms`` (the p99 TTFT the node may spend).
    """

    name: str = Field(min_length=1, description="the class's name (unique), as the outputs label it")
    share: float = Field(gt=0, le=1, description="share of demand in this class")
    ttft_p99_ms: float = Field(gt=0, description="p99 time to first token objective, network included [ms]")
    itl_p99_ms: float = Field(gt=0, description="p99 inter-token latency objective (see itl_metric) [ms]")
    itl_metric: Literal["step", "tpot"] = Field(
        "tpot",
        description="what itl_p99_ms bounds: tpot, each request's mean time per output token (MLPerf's and serving "
        "benchmarks' TPOT, what the calibration is fitted on); step, every single gap between tokens (stricter)",
    )
    connection: Literal["warm", "cold"] = Field(
        "warm", description="warm: 1 round trip to the first token; cold: + TCP and TLS 1.3 handshakes (3)"
    )
    network_round_trips: float | None = Field(
        None, ge=0.5, description="round trips before the first token, instead of connection's 1 or 3"
    )
    retrieval_ms: float = Field(0.0, ge=0, description="retrieval lookup time")
    retrieval_store_site: str | None = Field(None, description="site id of a remote retrieval store (adds its RTT)")
    safety_tokenization_ms: float = Field(0.0, ge=0, description="safety checks and tokenisation before prefill [ms]")
    queue_ms: float | None = Field(None, ge=0, description="given-goodput classes: queue and admission")
    slot_wait_ms: float = Field(0.0, ge=0, description="given-goodput classes: p99 wait for a decode slot")
    prefill_ms: float | None = Field(None, ge=0, description="given-goodput classes: prefill")
    first_decode_ms: float | None = Field(None, ge=0, description="given-goodput classes: first decode step")
    goodput_tok_s_per_node: float | None = Field(None, gt=0, description="given goodput (null: serving model)")
    utilisation_cap: float | None = Field(
        None, gt=0, le=1, description="given-goodput classes: usable share of capacity (null: 1 - serving.headroom)"
    )
    input_tokens: int = Field(1024, ge=1, description="serving model: MEAN prompt length (before 2026-12: the longest)")
    input_tokens_max: int | None = Field(
        None, ge=1, description="serving model: longest prompt (or its p99); KV room and p99 TTFT (null: the mean)"
    )
    output_tokens: int = Field(290, ge=1, description="serving model: MEAN answer length")
    prefix_cache_hit_rate: float = Field(
        0.0, ge=0, lt=1, description="share of prompt tokens found in the prefix cache (fixed; see prefix_reuse for the model)"
    )
    prefix_reuse: str | None = Field(
        None,
        description="with serving.kv_cache: a profile of data/serving/prefix_reuse.csv (chat, agent); the hit rate then "
        "comes from the cache model per site instead of prefix_cache_hit_rate",
    )
    min_tok_s_per_user: float = Field(0.0, ge=0, description="serving model: interactivity floor")
    serving_ttft_budget_ms: float | None = Field(
        None,
        gt=0,
        description="serving model: p99 TTFT the node may spend (queues, prefill, KV transfer, first decode)",
    )
    time_shiftable: bool = Field(False, description="deadline in hours: demand is spread flat over the day")

    @property
    def round_trips(self) -> float:
        """Client-site round trips before the first token."""
        if self.network_round_trips is not None:
            return self.network_round_trips
        return 1.0 if self.connection == "warm" else 3.0

    @property
    def given(self) -> bool:
        """Whether goodput and the node's TTFT components are given rather than computed."""
        return self.goodput_tok_s_per_node is not None

    @model_validator(mode="after")
    def _longest_prompt_is_not_shorter_than_the_mean(self) -> WorkloadClass:
        if self.input_tokens_max is not None and self.input_tokens_max < self.input_tokens:
            raise ValueError(
                f"input_tokens_max ({self.input_tokens_max}) is below input_tokens ({self.input_tokens}): "
                "input_tokens is the MEAN prompt, input_tokens_max the longest (or its p99)"
            )
        return self

    @model_validator(mode="after")
    def _components_are_complete(self) -> WorkloadClass:
        if self.given:
            missing = [k for k in ("queue_ms", "prefill_ms", "first_decode_ms") if getattr(self, k) is None]
            if missing:
                raise ValueError(f"with goodput_tok_s_per_node given, also give {', '.join(missing)}")
            fixed = (
                self.retrieval_ms
                + self.safety_tokenization_ms
                + self.slot_wait_ms
                + sum(getattr(self, k) for k in ("queue_ms", "prefill_ms", "first_decode_ms"))
            )
        else:
            if self.serving_ttft_budget_ms is None:
                raise ValueError(
                    "give goodput_tok_s_per_node (with queue_ms, prefill_ms, first_decode_ms) or "
                    "serving_ttft_budget_ms for the serving model"
                )
            fixed = self.retrieval_ms + self.safety_tokenization_ms + self.serving_ttft_budget_ms
        if fixed >= self.ttft_p99_ms:
            raise ValueError(
                f"the fixed TTFT components sum to {fixed:g} ms, which leaves nothing of the "
                f"{self.ttft_p99_ms:g} ms objective for the network; lower them or raise ttft_p99_ms"
            )
        return self
