"""Work beside the caller (placement._process): tasks shared out with a forked child come back whole and in order."""

from __future__ import annotations

import os
import time

import pytest

from placement._process import can_fork, shared_out


def _task(k: int, seconds: float) -> tuple[int, int]:
    time.sleep(seconds)
    return k, os.getpid()


@pytest.mark.skipif(not can_fork(), reason="no safe fork here: the tasks run in turn")
def test_tasks_are_shared_out_between_the_caller_and_a_child_and_come_back_in_order() -> None:
    # the first task is long: while one side runs it, the other takes every short one
    lengths = [0.6, *[0.02] * 8]
    results = shared_out([lambda k=k, s=s: _task(k, s) for k, s in enumerate(lengths)])
    assert [k for k, _ in results] == list(range(len(lengths)))
    pids = [pid for _, pid in results]
    assert len(set(pids)) == 2, "both the caller and the child took tasks"
    assert all(pid != pids[0] for pid in pids[1:]), "the side with the long task took no other"


def test_a_task_that_fails_fails_the_whole() -> None:
    def fail() -> int:
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        shared_out([lambda: 1, fail, lambda: 3, fail])
    assert shared_out([lambda: 1]) == [1] and shared_out([]) == []
