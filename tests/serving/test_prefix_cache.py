"""The prefix cache's physics: retention, session and shared hits (Che), the miss peak, tiers and the node."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from placement._errors import InputError
from placement.profiles.build import class_profiles
from placement.scenario.classes import WorkloadClass
from placement.scenario.load import load_scenario
from placement.scenario.sections import KvCacheSection, ServingSection
from placement.serving.prefix_cache import (
    PrefixReuse,
    hit_rate,
    hit_rate_limit,
    load_reuse,
    load_tiers,
    miss_peak,
    retention_s,
    session_hit_rate,
    shared_hit_rate,
)
from tests.conftest import write_scenario


def _uniform(n: int, *, session: float = 0.0, shared: float = 1.0) -> PrefixReuse:
    return PrefixReuse("u", session, 30.0, shared, n, 0.0)


def test_uniform_popularity_by_hand() -> None:
    """N equally popular prefixes: each is cached with probability 1 - exp(-lam T / N); misses peak at N / (e T)."""
    reuse, keep = _uniform(1000), 50.0
    rates = np.array([1.0, 20.0, 400.0])
    assert shared_hit_rate(reuse, rates, keep) == pytest.approx(1.0 - np.exp(-rates * keep / 1000))
    # lam exp(-lam T / N) peaks at lam = N / T, at N / (e T) misses per second
    assert miss_peak(reuse) == pytest.approx(1000 / math.e, rel=1e-3)


def test_session_hits_follow_the_turn_gap() -> None:
    reuse = PrefixReuse("s", 0.4, 60.0, 0.0, 1, 0.0)
    assert session_hit_rate(reuse, 60.0) == pytest.approx(1 - math.exp(-1))
    assert hit_rate(reuse, np.array([5.0]), 120.0)[0] == pytest.approx(0.4 * (1 - math.exp(-2)))
    assert retention_s(1e12, 2e9) == pytest.approx(500.0)


def test_a_site_that_sees_more_of_a_class_hits_more_up_to_the_limit() -> None:
    chat = load_reuse()["chat"]
    rates = np.array([1e-5, 1.0, 100.0, 10_000.0, 1e7])
    hits = hit_rate(chat, rates, 600.0)
    assert np.all(np.diff(hits[:4]) > 0) and hits[4] >= hits[3], "consolidating a class raises its hit rate"
    assert hits[-1] == pytest.approx(hit_rate_limit(chat, 600.0), abs=1e-3)
    assert hits[0] == pytest.approx(chat.session_share * session_hit_rate(chat, 600.0), abs=1e-3), (
        "a cold site hits its sessions only"
    )
    # a skewed popularity keeps its head hot: fewer misses at the peak than N / e
    assert miss_peak(chat) < chat.shared_prefixes / math.e


def test_the_bundled_tables_stack_and_are_marked() -> None:
    tiers = load_tiers()
    assert [tiers[t].adds_cache_gb_per_node for t in ("hbm", "dram", "nvme")] == [0.0, 1000.0, 24000.0]
    assert tiers["hbm"].load_gb_s_per_node == float("inf") and tiers["nvme"].load_gb_s_per_node < tiers["dram"].load_gb_s_per_node
    for reuse in load_reuse().values():
        assert reuse.basis == "estimate" and reuse.source
        assert reuse.session_share + reuse.shared_share <= 1


def test_bad_reuse_rows_are_gathered_with_row_and_field(tmp_path: Path) -> None:
    path = tmp_path / "reuse.csv"
    path.write_text(
        "profile,session_share,turn_gap_s,shared_share,shared_prefixes,zipf_exponent,basis,source\n"
        "a,0.8,60,0.4,100,0.9,estimate,x\n"
        "b,0.1,-1,0.1,2.5,0.9,estimate,x\n"
    )
    with pytest.raises(InputError) as err:
        load_reuse(path)
    text = str(err.value)
    assert "turn_gap_s" in text and "shared_prefixes" in text and "row 2" in text


def _chat(**extra: object) -> WorkloadClass:
    return WorkloadClass(
        name="chat",
        share=1.0,
        ttft_p99_ms=300,
        itl_p99_ms=50,
        serving_ttft_budget_ms=170,
        input_tokens=1155,
        input_tokens_max=4142,
        output_tokens=211,
        prefix_cache_hit_rate=0.5,
        **extra,
    )


def test_a_deeper_tier_holds_prefixes_longer_and_loads_them_slower() -> None:
    figures = {}
    for tier in ("dram", "nvme"):
        (profile,) = class_profiles([_chat(prefix_reuse="chat")], ServingSection(kv_cache=KvCacheSection(tier=tier)), source="t")
        assert profile.cache is not None
        figures[tier] = profile.cache
        # the node is served at the limit hit rate, and its prefill carries the load of the cached KV
        assert profile.cache_hit_rate == pytest.approx(profile.cache.hit_rate_limit)
        assert profile.prefill_ms >= profile.cache.hit_load_ms > 0
    assert figures["nvme"].retention_s > 10 * figures["dram"].retention_s
    assert figures["nvme"].hit_load_ms > figures["dram"].hit_load_ms
    assert figures["nvme"].warmup_nodes < figures["dram"].warmup_nodes, "a longer retention misses less"
    (plain,) = class_profiles([_chat()], ServingSection(kv_cache=KvCacheSection()), source="t")
    assert plain.cache is None and plain.cache_hit_rate == 0.5, "a class without a reuse profile keeps its fixed rate"


def test_an_unknown_reuse_profile_is_refused_and_a_buildout_takes_the_cache(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="prefix_reuse"):
        class_profiles([_chat(prefix_reuse="nope")], ServingSection(kv_cache=KvCacheSection()), source="t")
    path = write_scenario(tmp_path, serving={"accelerators": ["h100-sxm", "h200"], "kv_cache": {"tier": "dram"}})
    assert load_scenario(path).scenario.serving.kv_cache is not None  # the build-out models the tiers (tests/buildout)


def test_goodput_prints_what_the_cache_does(capsys: pytest.CaptureFixture[str]) -> None:
    from placement.cli import main

    base = ["goodput", "--model", "llama-3.1-70b", "--accelerator", "h100-sxm", "--input-tokens", "1155"]
    base += ["--input-tokens-max", "4142", "--output-tokens", "211", "--ttft-p99-ms", "170", "--itl-p99-ms", "50"]
    assert main([*base, "--kv-cache", "dram", "--prefix-reuse", "chat", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    cache = report["kv_cache"]
    assert cache["tier"] == "dram" and 0 < cache["hit_rate_limit"] <= 0.5 + 1e-9
    assert cache["hit_load_ms"] > 0 and report["ttft_ms"] <= 170 + 1e-6, "the hits' load fits the budget with the rest"
    assert main([*base, "--prefix-cache-hit-rate", str(cache["hit_rate_limit"]), "--json"]) == 0
    fixed = json.loads(capsys.readouterr().out)
    assert fixed["goodput_tok_s"] >= report["goodput_tok_s"], "the same hit rate without the load time is no slower"
    assert main([*base, "--kv-cache", "dram"]) != 0
    assert "--kv-cache needs --prefix-reuse" in capsys.readouterr().err
