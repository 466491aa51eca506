"""A scope's metrics across sessions: Proton's type rule in the program's own sessions only, and a
scope opened in all active sessions or in none."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import deuteron
import deuteron.collect.api as api
from deuteron.collect.scope_metrics import merged
from deuteron.collect.session import SessionError

MISMATCH = re.escape("Metric value type mismatch for valueId 0 (a): current=double, new=int64_t")


def _run_session(tmp_path: Path) -> int | None:
    """A session as `deuteron run` opens around a program."""
    name = str(tmp_path / "run")
    return api.start_session(name, backend="interpreter", outputs=("hatchet",), for_command=True)


def _children(path: Path) -> list[str]:
    return [c["frame"]["name"] for c in json.loads(path.read_text())[0]["children"]]


def test_the_run_session_merges_types_the_program_sessions_keep_apart(tmp_path: Path) -> None:
    """Under `deuteron run`, two of the program's sessions may give one metric name different types
    (Proton allows it: each session has its own slots); the run's session, which sees both, must
    not refuse the second and break the program."""
    run = _run_session(tmp_path)
    assert run is not None
    try:
        deuteron.start(str(tmp_path / "first"), backend="interpreter")
        with deuteron.scope("s", {"a": 1.0}):
            pass
        deuteron.finalize()
        deuteron.start(str(tmp_path / "second"), backend="interpreter")
        with deuteron.scope("s", {"a": "text"}):  # another session: Proton takes it
            pass
        deuteron.finalize()
    finally:
        api.finalize(run)
    assert _children(tmp_path / "run.hatchet") == ["s"]


def test_a_refusal_is_the_program_sessions_own_and_opens_the_scope_nowhere(tmp_path: Path) -> None:
    """The program's session refuses with Proton's words, numbering metrics as it saw them (the
    run's session had seen others first); the run's session, which took the scope already, closes
    it again, so the next scope is its sibling, not its child."""
    run = _run_session(tmp_path)
    assert run is not None
    try:
        with deuteron.scope("before", {"b": 1, "a": "x"}):  # the run's session sees b, then a
            pass
        deuteron.start(str(tmp_path / "own"), backend="interpreter")
        with deuteron.scope("test0", {"a": 1.0}):
            pass
        with pytest.raises(SessionError, match=MISMATCH):
            with deuteron.scope("test0", {"a": 1}):
                pass
        with pytest.raises(SessionError, match=MISMATCH):
            deuteron.enter_scope("entered", metrics={"a": 1})
        with pytest.raises(SessionError, match="without a matching enter_scope"):
            deuteron.exit_scope()  # the refused enter_scope left nothing to close
        with deuteron.scope("after"):
            pass
        assert api.depth(run) == 0
        deuteron.finalize()
    finally:
        api.finalize(run)
    # the refused enter_scope's frame stays, empty, as in Proton (whose scope was entered first)
    assert _children(tmp_path / "own.hatchet") == ["test0", "entered", "after"]
    assert _children(tmp_path / "run.hatchet") == ["before", "test0", "after"]  # the refused: nowhere


def test_a_scope_given_metrics_twice_adds_them_as_a_node_does() -> None:
    given = merged({"a": 1.0, "v": [1, 2], "p (pty)": 3}, {"a": 2.0, "v": [1, 1], "p (pty)": 5, "n": 7})
    assert given == {"a": 3.0, "v": [2, 3], "p (pty)": 5, "n": 7}
    assert merged(None, {"x": 1}) == {"x": 1}
