"""Proton's states as frames: launch-metadata states nest, metric copies are filed as <metric>."""

from __future__ import annotations

import pytest

from deuteron.collect.context.state import (
    StateContext,
    get_metadata_state_name,
    metric_state_name,
    state_frames,
)
from deuteron.model.tree import KERNEL, LAUNCH_METADATA_STATE, METRIC_KERNEL, STATE, Node


@pytest.mark.parametrize(
    ("name", "frames", "metric"),
    [
        ("warmup", ("warmup",), False),
        (LAUNCH_METADATA_STATE, (LAUNCH_METADATA_STATE,), False),
        (get_metadata_state_name("foo"), (LAUNCH_METADATA_STATE, "foo"), False),
        (metric_state_name("foo"), (LAUNCH_METADATA_STATE, "foo"), True),
        (metric_state_name(), (LAUNCH_METADATA_STATE,), True),
        # a kernel whose name holds colons keeps them (only the prefix and the suffix are Proton's)
        (get_metadata_state_name("ns::f"), (LAUNCH_METADATA_STATE, "ns::f"), False),
        (metric_state_name("ns::f"), (LAUNCH_METADATA_STATE, "ns::f"), True),
        # a user's state that merely starts like Proton's name is one frame
        ("__proton_launch_metadata_x", ("__proton_launch_metadata_x",), False),
    ],
)
def test_state_frames(name: str, frames: tuple[str, ...], metric: bool) -> None:
    assert state_frames(name) == (frames, metric)


def test_kernels_in_states_are_placed_below_nested_frames() -> None:
    root = Node("ROOT")
    plain = StateContext.place_kernel(root, "warmup", "k")
    copied = StateContext.place_kernel(root, metric_state_name("foo"), "void at::native::copy_kernel")
    helper = StateContext.place_kernel(root, get_metadata_state_name("foo"), "helper")
    meta = root.children[(LAUNCH_METADATA_STATE, STATE)]
    foo = meta.children[("foo", STATE)]
    assert root.children[("warmup", STATE)].children[("k", KERNEL)] is plain
    assert foo.children[(METRIC_KERNEL, KERNEL)] is copied
    assert foo.children[("helper", KERNEL)] is helper
    assert StateContext.place(root, None) is root
