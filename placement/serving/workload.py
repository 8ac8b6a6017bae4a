"""What a node serves and the objective it must meet: the :class:`Workload` the node search reads.

Prompt and answer lengths (means, the longest prompt and a clipped-lognormal prompt mix from
:mod:`placement.serving.lengths`), the p99 TTFT and inter-token objectives, the prefix cache's hit rate and any
speculative decoding, with the quantities the search derives from them (tokens to prefill, decode steps per
answer, the p99 batch under Poisson arrivals, the prefill service time's variability).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from placement.serving.efficiency import ServingEfficiency
from placement.serving.lengths import LengthDistribution
from placement.serving.speculative import Speculation

#: Standard-normal quantile of the p99: under Poisson arrivals the number of sequences decoding fluctuates
#: (M/G/∞: variance = mean), so the p99 step runs at ``B + z · sqrt(B)`` sequences, not at the mean ``B``.
P99_Z = 2.326
#: Equally likely prompt lengths the chunk-size tail is read from.
LENGTH_POINTS = 256


@dataclass(frozen=True, kw_only=True)
class Workload:
    """What a node serves and the objective it must meet, in the units the search reads.

    Attributes
    ----------
    input_tokens : float
        Mean prompt. [tokens]
    input_tokens_max : float
        Longest prompt the node must hold and answer inside the TTFT objective. [tokens]
    output_tokens : float
        Mean answer. [tokens]
    ttft_p99_ms, itl_p99_ms : float
        The objective. [ms]
    min_tok_s_per_user : float
        Interactivity floor: decode speed per user. [tokens/s]
    hit_rate : float
        Share of prompt tokens served from the prefix cache.
    speculation : Speculation or None
        Speculative decoding (:mod:`placement.serving.speculative`); None decodes one token per step.
    kv_link_gbit_s : float or None
        Disaggregated pools in different metros: the prompt's KV crosses one link of this rate (the whole KV,
        one copy); None: the pools share a hall and every prefill GPU sends its shard over its own scale-out NIC.
        [Gbit/s]
    itl_metric : {"step", "tpot"}
        What the p99 inter-token objective bounds: ``"tpot"`` (default, the metric the calibration is fitted on),
        each request's mean time per output token (MLPerf's TPOT and every serving benchmark's), so the
        chunk-carrying steps count at their share of its steps; ``"step"``, every single gap between tokens, so
        the p99 is set by the chunk-carrying steps.
    """

    input_tokens: float
    input_tokens_max: float
    output_tokens: float
    ttft_p99_ms: float
    itl_p99_ms: float
    min_tok_s_per_user: float
    hit_rate: float
    speculation: Speculation | None = None
    kv_link_gbit_s: float | None = None
    itl_metric: str = "tpot"

    def p99_batch(self, batch: NDArray[np.float64]) -> NDArray[np.float64]:
        """The batch the p99 inter-token objective is read at, for a mean batch ``batch`` under Poisson arrivals.

        Sequences in flight fluctuate as an M/G/∞ queue (variance = mean). ``"step"`` (every token's gap): the
        99th percentile of the instantaneous batch, ``B + z · sqrt(B)``. ``"tpot"`` (each request's mean time per
        output token, what MLPerf and serving benchmarks report as TPOT): a request averages the batch over its
        own life, and the average of an M/D/∞ count over one service time has variance ``2B / 3``, so
        ``B + z · sqrt(2B / 3)``.
        """
        spread = np.sqrt(batch) if self.itl_metric == "step" else np.sqrt(2.0 * batch / 3.0)
        return np.asarray(batch + P99_Z * spread)

    @property
    def tokens_per_step(self) -> float:
        """Mean tokens a decode step emits per sequence (1 without speculation)."""
        return 1.0 if self.speculation is None else self.speculation.tokens_per_step

    @property
    def verify_tokens(self) -> float:
        """Tokens each decoding sequence carries through a step's GEMMs (1 without speculation)."""
        return 1.0 if self.speculation is None else float(self.speculation.verify_tokens)

    @property
    def step_factor(self) -> float:
        """A decode step with its draft passes over the same step without them (1 without speculation)."""
        return 1.0 if self.speculation is None else self.speculation.step_factor

    @property
    def answer_steps(self) -> float:
        """Decode steps a mean answer takes. [steps]"""
        return self.output_tokens / self.tokens_per_step

    @property
    def new_tokens(self) -> float:
        """Mean prompt tokens to prefill (the cached prefix skipped). [tokens]"""
        return self.input_tokens * (1.0 - self.hit_rate)

    @property
    def new_tokens_max(self) -> float:
        """Prompt tokens of the longest prompt to prefill. [tokens]"""
        return self.input_tokens_max * (1.0 - self.hit_rate)

    @property
    def new_token_quantiles(self) -> NDArray[np.float64]:
        """Equally likely prompt lengths to prefill (clipped lognormal from mean and longest). [tokens]"""
        longest = self.input_tokens_max if self.input_tokens_max > self.input_tokens else None
        prompts = LengthDistribution(self.input_tokens, longest)
        return np.asarray(prompts.quantiles(LENGTH_POINTS) * (1.0 - self.hit_rate))

    @property
    def prompt_cv2(self) -> float:
        """Squared coefficient of variation of the prompt tokens to prefill (0: every prompt the mean).

        A prompt holds its replica's chunk pipeline in proportion to its length, so this is the prefill service
        time's variability that the queue's tail reads (Allen-Cunneen).
        """
        lengths = self.new_token_quantiles
        mean = float(lengths.mean())
        return float(lengths.var() / mean**2) if mean > 0 else 0.0

    @property
    def context_tokens(self) -> float:
        """Mean KV length a decoding sequence reads: mean prompt plus half the answer. [tokens]"""
        return self.input_tokens + self.output_tokens / 2.0

    @property
    def longest_tokens(self) -> float:
        """KV of the longest request at its end: longest prompt plus the answer. [tokens]"""
        return self.input_tokens_max + self.output_tokens


def service_cv2(workload: Workload, eff: ServingEfficiency) -> float:
    """The prefill service time's squared coefficient of variation: an override, else the prompt mix's."""
    return workload.prompt_cv2 if eff.service_cv2 is None else eff.service_cv2
