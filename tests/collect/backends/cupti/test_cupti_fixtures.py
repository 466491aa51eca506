"""Real CUPTI data, replayed without a GPU: decoding, correlation and aggregation in CI.

The drains in tests/fixtures/cupti_{shadow,python} were recorded on an H200 (triton 3.6,
torch 2.11+cu130) by ``scripts/record_cupti_fixture.py``, whose launches are known: per step
4 Triton ``add_kernel`` in scope ``train`` plus a Linear forward/backward, 3 steps; a CUDA
graph of 2 ``add_kernel`` captured in ``capture`` and replayed twice in ``replay``; a
``launch_metadata`` kernel 3 times in ``hooked`` (hook="triton").
"""

from __future__ import annotations

import pytest

from deuteron.collect.backends.cupti import replay
from deuteron.collect.placement import CAPTURED_AT, NO_LAUNCH, NO_PYTHON, OTHER_THREADS
from deuteron.collect.session import Session
from deuteron.model.tree import Node
from tests.helpers.paths import FIXTURES_DIR

FIXTURES = FIXTURES_DIR
SCRIPT = "/work/main/scripts/record_cupti_fixture.py"


def child(node: Node, name: str) -> Node:
    for c in node.children.values():
        if c.name == name:
            return c
    raise AssertionError(f"no {name!r} under {node.name!r}: {[c.name for c in node.children.values()]}")


def path(node: Node, *names: str) -> Node:
    for name in names:
        node = child(node, name)
    return node


def total(node: Node) -> int:
    return sum(int(n.metrics.get("count", 0)) for n in node.walk())  # type: ignore[call-overload]


def replayed(context: str) -> tuple[Session, object]:
    session = Session(0, "fixture", backend="interpreter", context=context)
    backend = replay(FIXTURES / f"cupti_{context}", session)
    return session, backend


def test_shadow_fixture_counts_every_kernel_where_it_was_launched() -> None:
    session, backend = replayed("shadow")
    root = session.profile.root
    assert total(root) == 46
    assert path(root, "train", "add_kernel").metrics["count"] == 12
    backward = path(root, "train", OTHER_THREADS)  # autograd's thread inherits the scope
    assert total(backward) == 16
    assert path(root, "replay", CAPTURED_AT, "capture", "add_kernel").metrics["count"] == 4
    hooked = path(root, "hooked", "scaled_add").metrics
    assert (hooked["count"], hooked["flops"], hooked["bytes"]) == (3, 3 * 4096, 3 * 12 * 4096)
    counters = backend.join.counters  # type: ignore[attr-defined]
    assert (counters.kernels, counters.unmatched, counters.graph_without_capture) == (46, 0, 0)
    for node in root.walk():
        if node.metrics.get("count"):
            assert node.metrics["time (ns)"] > 0 and node.metrics["device_id"] == "0"  # type: ignore[operator]
    assert NO_LAUNCH not in {c.name for c in root.children.values()}  # nothing unmatched: no empty frame


def test_python_fixture_files_kernels_under_call_paths_and_graph_kernels_under_their_capture_line() -> None:
    session, _ = replayed("python")
    root = session.profile.root
    module = child(root, f"{SCRIPT}:75@<module>")
    assert path(module, f"{SCRIPT}:59@main", "add_kernel").metrics["count"] == 12
    assert path(module, f"{SCRIPT}:70@main", "scaled_add").metrics["count"] == 3
    for replay_line in (66, 67):
        replay_call = path(module, f"{SCRIPT}:{replay_line}@main")
        captured = path(next(iter(replay_call.children.values())), CAPTURED_AT, f"{SCRIPT}:75@<module>")
        for capture_line in (63, 64):
            assert path(captured, f"{SCRIPT}:{capture_line}@main", "add_kernel").metrics["count"] == 1
    assert total(child(root, NO_PYTHON)) == 16  # launched by autograd's thread, which runs no Python
    assert total(root) == 46


@pytest.mark.parametrize("context", ["shadow", "python"])
def test_trace_of_a_fixture_puts_kernels_on_stream_lanes_with_launch_arrows(context: str) -> None:
    session, _ = replayed(context)
    events, lanes = session.trace_events()
    kernels = [e for e in events if e.category == "kernel"]
    assert len(kernels) == 46
    assert {lanes[e.lane] for e in kernels} <= {f"GPU 0 stream {s}" for s in range(1, 1 << 16)}
    assert len({e.lane for e in kernels}) >= 2  # the default stream and the graph's capture stream
    arrows = [e for e in kernels if e.launched_from is not None]
    assert len(arrows) == 46
    assert all(e.launched_from[1] <= e.start_ns for e in arrows)  # type: ignore[index]
