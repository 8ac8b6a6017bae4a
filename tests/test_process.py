"""Work beside the caller (placement._process): tasks shared out with a forked child come back whole and in order; a
table mapped from a file gives back the pages a pass read."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from placement import _process as process
from placement._process import shared_out
from tests.conftest import REPO

# Run in a fresh process: a pytest-xdist worker has threads of its own, and a process with threads does not fork
# (the tasks then run in turn, which the second test checks).
SHARED = """
import json, os, time
from placement._process import can_fork, shared_out

def task(k, seconds):
    time.sleep(seconds)
    return k, os.getpid()

lengths = [0.6] + [0.02] * 8  # the first task is long: while one side runs it, the other takes every short one
results = shared_out([lambda k=k, s=s: task(k, s) for k, s in enumerate(lengths)])
print(json.dumps({"fork": can_fork(), "results": results}))
"""


def test_tasks_are_shared_out_between_the_caller_and_a_child_and_come_back_in_order() -> None:
    done = subprocess.run([sys.executable, "-c", SHARED], cwd=REPO, capture_output=True, text=True, check=True)
    answer = json.loads(done.stdout)
    if not answer["fork"]:
        pytest.skip("no safe fork on this platform: the tasks run in turn")
    results = answer["results"]
    assert [k for k, _ in results] == list(range(9))
    pids = [pid for _, pid in results]
    assert len(set(pids)) == 2, "both the caller and the child took tasks"
    assert all(pid != pids[0] for pid in pids[1:]), "the side with the long task took no other"


def test_a_task_that_fails_fails_the_whole() -> None:
    def fail() -> int:
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        shared_out([lambda: 1, fail, lambda: 3, fail])
    assert shared_out([lambda: 1, lambda: 2]) == [1, 2] and shared_out([]) == []


def _mapped(tmp_path: Path, table: np.ndarray) -> np.memmap:
    path = tmp_path / "table.bin"
    table.tofile(path)
    return np.memmap(path, dtype=table.dtype, mode="r", shape=table.shape)


def _file_pages_kb() -> int:
    """This process's resident file-backed memory (``RssFile`` of /proc/self/status). [KiB]"""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssFile:"):
            return int(line.split()[1])
    raise AssertionError("no RssFile line")


def test_a_mapped_table_read_by_blocks_gives_numpys_figures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(process, "RELEASE_ROWS", 7)  # many blocks, the last one short
    rng = np.random.default_rng(3)
    table = rng.uniform(1, 300, (100, 13)).astype(np.float32)
    mapped = _mapped(tmp_path, table)
    rows, cols = rng.integers(0, 100, 500), rng.integers(0, 13, 500)
    for source in (table, mapped):
        np.testing.assert_array_equal(process.take_pairs(source, rows, cols), table[rows, cols])
        np.testing.assert_array_equal(process.row_minimum(source), table.min(axis=1))
    process.release_rows(mapped, 3, 50)
    np.testing.assert_array_equal(np.asarray(mapped), table)  # let go, the pages are read again: the same figures


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="reads RssFile from Linux's /proc")
def test_the_pages_a_pass_over_a_mapped_table_read_go_back(tmp_path: Path) -> None:
    mapped = _mapped(tmp_path, np.ones((8192, 2048), dtype=np.float32))  # 64 MiB
    before = _file_pages_kb()
    assert float(mapped.sum(dtype=np.float64)) == 8192 * 2048
    held = _file_pages_kb() - before
    assert held > 48 * 1024, "reading the table made its pages resident"
    process.release_rows(mapped)
    assert _file_pages_kb() - before < 8 * 1024
    rows = np.arange(8192)
    process.row_minimum(mapped)
    process.take_pairs(mapped, rows, rows % 2048)
    assert _file_pages_kb() - before < 24 * 1024, "the block passes let each block's pages go"


STANDBY = """
import json, os, sys, time
from pathlib import Path
from placement._process import Standby, can_fork

mark = Path(sys.argv[1])
state = {}

def prepare():
    state["prepared_in"] = os.getpid()
    mark.write_text(str(os.getpid()))

def work(payload):
    if payload == "fail":
        raise ValueError("the work failed")
    return {"payload": payload[::-1], "prepared_in": state.get("prepared_in"), "worked_in": os.getpid()}

fork = can_fork()
standby = Standby(prepare, work)
for _ in range(1000):  # the child prepares while this process goes on: its mark appears before any payload is sent
    if mark.exists():
        break
    time.sleep(0.01)
prepared_first = mark.exists()
answer = standby.run("abc")
with Standby(prepare, work) as failing:
    try:
        failing.run("fail")
        error = None
    except ValueError as exc:
        error = str(exc)
idle = Standby(prepare, work)
idle_pid = idle._pid
idle.close()
try:
    os.kill(idle_pid, 0)
    idle_alive = True
except OSError:
    idle_alive = False
print(json.dumps({"fork": fork, "caller": os.getpid(), "prepared_first": prepared_first, "answer": answer,
                  "error": error, "idle_alive": idle_alive}))
"""


def test_a_child_on_standby_prepares_at_once_and_works_on_the_payload_sent_later(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", STANDBY, str(tmp_path / "mark")], cwd=REPO, capture_output=True,
                          text=True, check=True)  # fmt: skip
    answer = json.loads(done.stdout)
    if not answer["fork"]:
        pytest.skip("no safe fork on this platform: the standby works in the caller")
    assert answer["prepared_first"], "the child prepared before the payload was sent"
    work = answer["answer"]
    assert work["payload"] == "cba"
    assert work["worked_in"] == work["prepared_in"] != answer["caller"], "prepared and worked in the same child"
    assert answer["error"] == "the work failed", "the child's exception is raised in the caller"
    assert not answer["idle_alive"], "a standby closed without a payload leaves no child behind"


def test_where_a_fork_is_not_safe_the_standby_prepares_and_works_in_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(process, "can_fork", lambda: False)
    calls: list[str] = []
    standby = process.Standby(lambda: calls.append("prepare"), lambda payload: calls.append(payload) or len(calls))
    assert not standby.forked and calls == []
    assert standby.run("work") == 2
    assert calls == ["prepare", "work"]
