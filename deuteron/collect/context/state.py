"""Proton's states: a per-thread name (``deuteron.state("warmup")``) that is the last frame of the
context of whatever is recorded inside it. A kernel launched in the state sits below the state's
frame (``scope > warmup > kernel``), and a scope's metrics added in it go to a state frame below the
scope (``scope > warmup``), so the same work in two states can be told apart.

:class:`StateContext` is one session's source; ``state``/``enter_state``/``exit_state`` (also a
decorator) set it on every active session. ``metadata_state`` is the state Proton puts around
computing a kernel's launch metadata: kernels launched inside it are bookkeeping, and every view
leaves their frames out.

Launch-metadata states are nested frames, as Proton files them: ``__proton_launch_metadata:foo``
(computing kernel ``foo``'s metadata) is ``__proton_launch_metadata > foo``, and a kernel that
copies a device-tensor metric (:func:`metric_state_name`) is filed as ``<metric>`` below them
rather than by its own name.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from deuteron.collect.registry import OpenSession
from deuteron.collect.registry import active as _active
from deuteron.model.tree import KERNEL, LAUNCH_METADATA_STATE, METRIC_KERNEL, STATE, Node


class StateContext:
    """One session's states: the name each thread is in, and the frame it puts below a context."""

    name = "state"

    def __init__(self) -> None:
        self._tls = threading.local()

    def current(self) -> str | None:
        """The state the calling thread is in, or None."""
        return getattr(self._tls, "name", None)

    def set(self, name: str | None) -> None:
        self._tls.name = name

    def locate(self, base: Node) -> Node:
        return self.place(base, getattr(self._tls, "name", None))

    @staticmethod
    def place(base: Node, name: str | None) -> Node:
        """The frame of state ``name`` below ``base`` (the innermost of a launch-metadata state's
        nested frames), or ``base`` without a state."""
        if not name:
            return base
        node = base
        for frame in state_frames(name)[0]:
            node = node.child(frame, STATE)
        return node

    @staticmethod
    def place_kernel(base: Node, name: str | None, kernel: str) -> Node:
        """Where a kernel named ``kernel`` launched in state ``name`` goes below ``base``: a
        metric-copy kernel is filed as ``<metric>``, as Proton names it."""
        metric = state_frames(name)[1] if name else False
        return StateContext.place(base, name).child(METRIC_KERNEL if metric else kernel, KERNEL)


@functools.lru_cache(maxsize=4096)  # a run has a few states; each kernel group filed asks again
def state_frames(name: str) -> tuple[tuple[str, ...], bool]:
    """A state's frames, outermost first, and whether kernels in it copy metrics:
    ``"warmup"`` is one frame; ``"__proton_launch_metadata:foo"`` two
    (``__proton_launch_metadata > foo``); ``"__proton_launch_metadata:foo:<metric>"`` the same two,
    with metric copies."""
    if name != LAUNCH_METADATA_STATE and not name.startswith(COMPUTE_METADATA_SCOPE_PREFIX):
        return (name,), False
    rest = name[len(COMPUTE_METADATA_SCOPE_PREFIX) :]
    metric = rest == METRIC_KERNEL or rest.endswith(_METRIC_SUFFIX)
    owner = rest[: -len(_METRIC_SUFFIX)] if rest.endswith(_METRIC_SUFFIX) else "" if metric else rest
    return ((LAUNCH_METADATA_STATE, owner) if owner else (LAUNCH_METADATA_STATE,)), metric


# Proton's user-facing states (``deuteron.state`` re-exports them), over every active session.
F = TypeVar("F", bound=Callable[..., Any])

COMPUTE_METADATA_SCOPE_NAME = LAUNCH_METADATA_STATE  # Proton's names for it
COMPUTE_METADATA_SCOPE_PREFIX = LAUNCH_METADATA_STATE + ":"


_METRIC_SUFFIX = ":" + METRIC_KERNEL


def get_metadata_state_name(kernel_name: str | None = None) -> str:
    """The launch-metadata state's name for one kernel (or for any, without a name)."""
    return f"{COMPUTE_METADATA_SCOPE_PREFIX}{kernel_name}" if kernel_name else COMPUTE_METADATA_SCOPE_NAME


def metric_state_name(kernel_name: str | None = None) -> str:
    """The state in which a kernel's (or a scope's, without a name) device-tensor metrics are
    copied: ``__proton_launch_metadata[:kernel]:<metric>``."""
    owner = f"{kernel_name}:" if kernel_name else ""
    return f"{COMPUTE_METADATA_SCOPE_PREFIX}{owner}{METRIC_KERNEL}"


class state:  # noqa: N801 - Proton's name
    """Put kernels launched inside below a frame of this state (Proton's states)."""

    __slots__ = ("name", "_previous")

    def __init__(self, name: str) -> None:
        self.name = name
        self._previous: list[tuple[OpenSession, str | None]] = []

    def __enter__(self) -> state:
        self._previous = []
        for s in _active:
            self._previous.append((s, s.state()))
            s.set_state(self.name)
        return self

    def __exit__(self, *exc: object) -> None:
        for s, prev in self._previous:
            s.set_state(prev)
        self._previous = []

    def __call__(self, func: F) -> F:
        name = self.name

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with state(name):
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


class metadata_state(state):  # noqa: N801 - Proton's name
    """Proton's state around computing a kernel's launch metadata: kernels launched inside (a
    ``launch_metadata`` hook that reads a device tensor) are bookkeeping, not the workload, and
    ``deuteron view`` leaves frames of this state out, as proton-viewer does."""

    __slots__ = ()

    def __init__(self, kernel_name: str | None = None) -> None:
        super().__init__(get_metadata_state_name(kernel_name))


_open_states = threading.local()


def enter_state(name: str) -> None:
    """Proton's ``enter_state``: kernels launched until ``exit_state`` carry this state."""
    stack = _open_states.__dict__.setdefault("stack", [])
    entered = state(name)
    entered.__enter__()
    stack.append(entered)


def exit_state() -> None:
    stack = _open_states.__dict__.get("stack")
    if stack:
        stack.pop().__exit__()
