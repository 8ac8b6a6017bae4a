"""Large round-trip tables leave the process's memory once the model is built: the same figures, mapped from a file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from placement.instance import latency as instance_latency
from placement.instance.build import build_instance
from placement.instance.latency import mapped_from_disk
from placement.instance.load import load_populations, load_sites
from placement.scenario.load import load_scenario
from tests.conftest import write_scenario


def test_a_large_table_is_mapped_with_the_same_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(instance_latency, "MAPPED_RTT_FROM", 100_000)  # as a 2,000-site world's tables are to 16 M
    table = np.random.default_rng(1).random((3000, 40)).astype(np.float32)
    mapped = mapped_from_disk(table)
    assert isinstance(mapped, np.memmap) and mapped.dtype == table.dtype and mapped.shape == table.shape
    assert np.array_equal(mapped, table)
    assert not mapped.flags.writeable  # read-only: a table the plan reads, never one it writes
    assert mapped_from_disk(mapped) is mapped  # mapped once, not copied again


def test_a_small_table_stays_as_it_is() -> None:
    table = np.ones((10, 10))  # below MAPPED_RTT_FROM
    assert mapped_from_disk(table) is table


def test_an_instance_built_with_mapped_tables_reads_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_scenario(tmp_path)
    in_memory = build_instance(load_scenario(path))
    monkeypatch.setattr(instance_latency, "MAPPED_RTT_FROM", 0)
    mapped = build_instance(load_scenario(path))
    assert isinstance(mapped.rtt_p50_ms, np.memmap) and isinstance(mapped.rtt_p90_ms, np.memmap)
    assert mapped.rtt_ms is mapped.rtt_p90_ms  # the budget's quantile is one of the two, not a third table
    assert np.array_equal(mapped.rtt_p50_ms, in_memory.rtt_p50_ms) and np.array_equal(mapped.rtt_p90_ms, in_memory.rtt_p90_ms)
    every = np.arange(len(mapped.commodity_class))
    first_site = np.zeros(len(every), dtype=np.int64)
    assert np.array_equal(mapped.ttft_ms(every, first_site), in_memory.ttft_ms(every, first_site))


def test_large_round_trips_are_written_to_their_file_as_they_are_computed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded = load_scenario(write_scenario(tmp_path))
    scenario, resolve = loaded.scenario, loaded.resolve
    sites = load_sites(scenario.sites, resolve, source="test")
    cities = load_populations(scenario.demand, resolve, source="test").cities
    latency = instance_latency.build_latency_model(scenario.latency, resolve, sites=sites, source="test")
    in_memory = instance_latency.worst_member_rtt_ms(cities, sites, latency)
    monkeypatch.setattr(instance_latency, "MAPPED_RTT_FROM", 0)
    mapped = instance_latency.worst_member_rtt_ms(cities, sites, latency)
    for table, expected in zip(mapped, in_memory, strict=True):
        assert isinstance(table, np.memmap) and not table.flags.writeable
        assert np.array_equal(table, expected)
        assert mapped_from_disk(table) is table  # not copied to a second file
