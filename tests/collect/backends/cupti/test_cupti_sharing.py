"""Several sessions on one CUPTI subscription, without a GPU: the shared context ids a thread's
slot holds are filed back into each session's own tree, and a session paused while another
records loses only the kernels launched while it was paused (by the launch's timestamp). Also
the session's own ids against the shim's Python path ids, which meet in one session."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import deuteron.collect.backends.cupti.backend as cupti
from deuteron.collect.backends.cupti.records import LAUNCH
from deuteron.collect.backends.cupti.sharing import SHARED_BASE, SharedContexts
from deuteron.collect.placement import LaunchContexts
from deuteron.collect.session import Session
from deuteron.model.tree import Node
from tests.helpers.cupti_records import entries_of, kernels_of
from tests.helpers.cupti_records import kernel_row as k
from tests.helpers.profiles import find


def _engine(*sessions: Session) -> cupti.CuptiBackend:
    engine = cupti.CuptiBackend()
    engine.live = False
    engine.names = {111: "kern_a", 222: "kern_b"}
    for s in sessions:
        engine._reserve(s)
        engine.attached.append(s)
        engine.sharing.join(s.id, cupti.ROOT_CTX)
    return engine


def test_shared_ids_file_each_kernel_under_each_sessions_own_scope() -> None:
    first, second = Session(0, "a", backend="interpreter"), Session(1, "b", backend="interpreter")
    engine = _engine(first)
    sharing = engine.sharing
    own = first.tree.contexts.id_of(first.profile.root.child("train"))
    assert sharing.slot_for(0, own, 0) == (own, 0)  # alone: the session's own ids, as before
    sharing.current().clear()  # alone, the backend sets the slot directly: nothing is remembered
    sharing.members[0].here = lambda: (own, 0)  # the first session's scope on this thread, asked for
    engine.attached.append(second)
    engine._reserve(second)
    sharing.join(1, cupti.ROOT_CTX)
    step = second.tree.contexts.id_of(second.profile.root.child("step"))
    gid, state = sharing.slot_for(1, step, 0)
    assert gid >= SHARED_BASE and state == 0
    assert sharing.slot_for(1, step, 0) == (gid, 0)  # interned
    assert sharing.table[gid] == {0: (own, 0), 1: (step, 0)}
    engine.sharing.set_active(1, False, 500)  # the second session is paused from t=500 on
    engine.ingest(
        entries_of((LAUNCH, 1, own, 100), (LAUNCH, 2, gid, 200), (LAUNCH, 3, gid, 600)).tobytes(),
        kernels_of(k(1, dur=10), k(2, dur=20), k(3, name=222, dur=30)).tobytes(),
    )
    assert find(first.profile, "train", "kern_a").metrics["count"] == 2  # its own id, then the shared one
    assert find(first.profile, "train", "kern_b").metrics["time (ns)"] == 30
    assert find(second.profile, "kern_a").metrics["count"] == 1  # before sharing: the second's root
    assert find(second.profile, "step", "kern_a").metrics["time (ns)"] == 20
    names = {n.name for n in second.profile.root.walk()}
    assert "kern_b" not in names  # launched while the second session was paused
    engine.sharing.set_active(1, True, 700)
    assert engine.sharing.members[1].inactive == [[500, 700]]


def test_active_mask_and_translation_edges() -> None:
    sharing = SharedContexts()
    sharing.join(3, 1)
    assert sharing.translate(3, 42, 5) == (42, 5)  # not shared: ids pass through
    sharing.join(4, 1)
    assert sharing.translate(4, 42, 5) == (1, 0)  # the owner's own id means root to a newcomer
    assert sharing.translate(4, SHARED_BASE + 99, 0) == (1, 0)  # an unknown shared id: root
    member = sharing.members[4]
    assert member.active_mask(np.array([1, 2], np.uint64)) is None
    sharing.set_active(4, False, 10)
    sharing.set_active(4, False, 11)  # paused twice: one span
    assert member.active_mask(np.array([0, 5, 10, 50], np.uint64)).tolist() == [True, True, False, False]


def test_python_paths_from_the_shim_never_take_ids_handed_out_here() -> None:
    """``-c python,torch``: a module stack's base is an id handed out by the session's contexts, and
    the CUPTI shim numbers each Python call path it captures from 16 up; binding those as they
    arrive must not move a base (it filed a model's kernels under another script line)."""
    root = Node("ROOT")

    def python_path(frames: Sequence[tuple[str, int, str]]) -> Node:
        node = root
        for filename, line, function in reversed(frames):
            node = node.child(f"{filename}:{line}@{function}")
        return node

    contexts = LaunchContexts(root, python_path)
    base = root.child("train.py:12@<module>")
    cid = contexts.id_of(base)
    for pid in range(16, 16 + 5000):
        contexts.add_python_path(pid, [("train.py", pid, "<module>")])
    assert contexts.node(cid) is base
    assert contexts.node(16).name == "train.py:16@<module>"
    assert contexts.id_of(root.child("step")) != cid
