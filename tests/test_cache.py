"""The cache of clusters and class profiles (placement._cache): a changed input misses, a what-if reuses, never stale."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from placement import _cache
from placement.cli import main
from placement.scenario.load import load_scenario
from tests.conftest import CATALOG_HEADER, REPO, computed_chat, write_scenario

CATALOG = CATALOG_HEADER + (
    "chicago,Chicago,US,North America,41.88,-87.63,50,80,1.3,10000000,false\n"
    "ashburn,Ashburn,US,North America,39.04,-77.49,50,70,1.3,10000000,false\n"
)
CITIES = (
    "geonameid,name,countrycode,admin1code,latitude,longitude,population,timezone\n"
    "1,Chicago,US,IL,41.88,-87.63,2700000,America/Chicago\n"
    "2,New York,US,NY,40.71,-74.01,8000000,America/New_York\n"
    "3,Denver,US,CO,39.74,-104.99,700000,America/Denver\n"
)
SERVING = {"model": "llama-3.1-70b", "accelerator": "h100-sxm"}


def _scenario(folder: Path, *, chat: dict[str, Any] | None = None, **overrides: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    sections: dict[str, Any] = {
        "classes": [chat or computed_chat(400.0)],
        "serving": SERVING,
        "latency": {"model": "great_circle"},
        "policy": {"unreachable": "report"},
        **overrides,
    }
    return write_scenario(folder, catalog=CATALOG, cities=CITIES, **sections)


def _digests(path: Path) -> dict[str, str]:
    """The digests the build stores the scenario's clusters and its first class's profile under."""
    loaded = load_scenario(path)
    scenario, base = loaded.scenario, path.parent
    return {
        "populations": _cache.key_digest("populations", scenario.demand, base=base),
        "profile": _cache.key_digest("class-profile", (scenario.serving, scenario.classes[0], 0), base=base),
    }


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(_cache.FOLDER_ENV, str(folder))
    return folder


def test_every_input_that_shapes_an_entry_changes_its_digest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = _digests(_scenario(tmp_path / "base"))
    assert _digests(_scenario(tmp_path / "again")) == base, "the same inputs in another folder: the same entries"
    changes: dict[str, tuple[str, Path]] = {
        "an SLO": ("profile", _scenario(tmp_path / "itl", chat=computed_chat(400.0, itl_p99_ms=40))),
        "the node TTFT budget": ("profile", _scenario(tmp_path / "node", chat=computed_chat(400.0, serving_ttft_budget_ms=150))),
        "the accelerator": ("profile", _scenario(tmp_path / "part", serving={**SERVING, "accelerator": "h200"})),
        "GPUs per node": ("profile", _scenario(tmp_path / "gpus", serving={**SERVING, "gpus_per_node": 4})),
        "the clusters": ("populations", _scenario(tmp_path / "k", demand={"clusters": 2})),
        "the adoption": ("populations", _scenario(tmp_path / "adopt", demand={"adoption": 0.06})),
    }
    for what, (kind, path) in changes.items():
        assert _digests(path)[kind] != base[kind], f"{what} changed, the {kind} entry did not"
    edited = _scenario(tmp_path / "cities")  # the cities file edited in place: one city's population
    (edited.parent / "cities.csv").write_text(CITIES.replace("700000", "700001"))
    assert _digests(edited)["populations"] != base["populations"]
    # a planner's measurements, named by a relative path: their contents, not their name
    rows = (REPO / "data" / "serving" / "measured.csv").read_text(encoding="utf-8")
    with_file = _scenario(tmp_path / "measured", serving={**SERVING, "measurements": "mine.csv"})
    (with_file.parent / "mine.csv").write_text(rows, encoding="utf-8")
    first = _digests(with_file)["profile"]
    (with_file.parent / "mine.csv").write_text(rows + "\n", encoding="utf-8")
    assert _digests(with_file)["profile"] != first
    monkeypatch.setattr(_cache, "build_fingerprint", lambda: "another version of the code or data")
    assert _digests(_scenario(tmp_path / "base"))["profile"] != base["profile"]


def test_a_digest_is_the_same_in_another_process(tmp_path: Path) -> None:
    # set ordering and hash seeds differ between processes: the digest must not
    path = _scenario(tmp_path / "s")
    code = f"import json; from tests.test_cache import _digests; from pathlib import Path; print(json.dumps(_digests(Path({str(path)!r}))))"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == _digests(path)


def test_a_what_if_reuses_the_profiles_and_plans_as_a_fresh_run(
    tmp_path: Path, own_cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from placement.instance import build as instance_build
    from placement.profiles import build

    first = _scenario(tmp_path / "first")
    assert main(["solve", str(first), "--out", str(tmp_path / "r1"), "--no-maps", "--quiet"]) == 0
    assert len(list(own_cache.glob("class-profile/*.pickle"))) == 1 and len(list(own_cache.glob("populations/*")))
    # a what-if: a price; with the serving physics unable to run, its profile must come from the cache
    what_if = _scenario(tmp_path / "what_if", economics={"opex_usd_per_node_h": 4.5})
    computed, rtt = build._computed, instance_build.worst_member_rtt_ms

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the profile was computed again")

    monkeypatch.setattr(build, "_computed", refuse)
    monkeypatch.setattr(instance_build, "worst_member_rtt_ms", refuse)  # the round trips too
    assert main(["solve", str(what_if), "--out", str(tmp_path / "r2"), "--no-maps", "--quiet"]) == 0
    # a site moved, or the network's last mile changed: its round trips miss (its price changed: they do not)
    moved = _scenario(tmp_path / "moved")
    (moved.parent / "catalog.csv").write_text(CATALOG.replace("39.04,-77.49", "38.90,-77.04"))
    priced = _scenario(tmp_path / "priced")
    (priced.parent / "catalog.csv").write_text(CATALOG.replace(",50,70,", ",50,75,"))
    access = _scenario(tmp_path / "access", latency={"model": "great_circle", "access_ms": 9.0})
    assert main(["solve", str(priced), "--out", str(tmp_path / "rp"), "--no-maps", "--quiet"]) == 0
    for missed in (moved, access):
        assert main(["solve", str(missed), "--out", str(tmp_path / "rm"), "--no-maps", "--quiet"]) == 1
        assert "the profile was computed again" in capsys.readouterr().err
    # an SLO changed: the entry misses, and the physics is asked
    slo = _scenario(tmp_path / "slo", chat=computed_chat(400.0, itl_p99_ms=45))
    assert main(["solve", str(slo), "--out", str(tmp_path / "r3"), "--no-maps", "--quiet"]) == 1
    assert "the profile was computed again" in capsys.readouterr().err
    monkeypatch.setattr(build, "_computed", computed)
    monkeypatch.setattr(instance_build, "worst_member_rtt_ms", rtt)
    # the what-if from the cache plans exactly as computed afresh, without it
    entries = sorted(own_cache.rglob("*.pickle"))
    assert main(["solve", str(what_if), "--out", str(tmp_path / "r4"), "--no-maps", "--quiet", "--no-cache"]) == 0
    assert sorted(own_cache.rglob("*.pickle")) == entries, "--no-cache writes nothing"
    for name in ("sites.csv", "assignments.csv", "populations.csv"):
        assert (tmp_path / "r2" / name).read_text() == (tmp_path / "r4" / name).read_text()
    cached_summary = json.loads((tmp_path / "r2" / "summary.json").read_text())
    fresh_summary = json.loads((tmp_path / "r4" / "summary.json").read_text())
    assert cached_summary["objective_usd_per_h"] == fresh_summary["objective_usd_per_h"]
    assert cached_summary["classes"] == fresh_summary["classes"]


def test_a_damaged_entry_is_computed_again(own_cache: Path) -> None:
    calls = []

    def compute() -> int:
        calls.append(1)
        return 42

    assert _cache.cached("test", {"x": 1}, compute) == 42 and _cache.cached("test", {"x": 1}, compute) == 42
    assert len(calls) == 1, "the second call reads the entry"
    (entry,) = own_cache.glob("test/*.pickle")
    entry.write_bytes(b"not a pickle")
    assert _cache.cached("test", {"x": 1}, compute) == 42 and len(calls) == 2
    assert _cache.cached("test", {"x": 2}, compute) == 42 and len(calls) == 3, "another input, another entry"


def test_the_cache_command_says_where_it_is_and_clears_it(
    own_cache: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _cache.cached("test", "a", lambda: "a" * 1000)
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert str(own_cache) in out and "1 entries" in out
    assert main(["cache", "clear"]) == 0 and "cleared 1 entries" in capsys.readouterr().out
    assert not list(own_cache.rglob("*.pickle"))
    monkeypatch.setenv(_cache.SWITCH_ENV, "off")
    assert _cache.cached("test", "b", lambda: "b") == "b" and not list(own_cache.rglob("*.pickle")), "off: nothing written"


def test_the_cache_keeps_under_its_size_by_dropping_the_oldest(own_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_cache, "MAX_BYTES", 5_000)
    for k in range(5):
        _cache.cached("test", k, lambda: b"x" * 2_000)
    kept = list(own_cache.rglob("*.pickle"))
    assert 1 <= len(kept) <= 2 and sum(p.stat().st_size for p in kept) <= 5_000
    newest = _cache.key_digest("test", 4)
    assert any(p.stem == newest for p in kept), "the newest entry is kept"
