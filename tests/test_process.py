"""Work beside the caller (placement._process): tasks shared out with a forked child come back whole and in order."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

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
