"""A torch.profiler started while Deuteron holds CUPTI is told in one line (its GPU events would be
silently empty): the watch on torch.profiler's start, on the CPU (the GPU twin runs it for real
under ``deuteron run -b cupti``: test_others_gpu.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from torch.profiler import ProfilerActivity, profile

from deuteron.collect.backends.cupti import others


@pytest.fixture
def holding() -> Iterator[list[bool]]:
    state = [True]
    others.watch(lambda: state[0])
    others._told.clear()
    yield state
    others._told.clear()
    state[0] = False


def test_a_torch_profiler_asking_for_cuda_is_told_once(
    holding: list[bool], capfd: pytest.CaptureFixture[str]
) -> None:
    for _ in range(2):
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
            pass
    err = capfd.readouterr().err
    assert err.count(others.MESSAGE) == 1


def test_no_word_for_a_cpu_profiler_or_when_deuteron_holds_nothing(
    holding: list[bool], capfd: pytest.CaptureFixture[str]
) -> None:
    with profile(activities=[ProfilerActivity.CPU]):
        pass
    holding[0] = False
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
        pass
    assert others.MESSAGE not in capfd.readouterr().err
