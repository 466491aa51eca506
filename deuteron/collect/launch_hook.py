"""Proton's launch hook (``hook="triton"``): each kernel's ``launch_metadata``, as the kernel's
name and metrics.

At each launch it evaluates the kernel's ``launch_metadata`` inside Proton's metadata state (so a
kernel the metadata function itself launches is bookkeeping, left out of views), keeps numbers
and tensors (not the reserved ``name``/``function``/``stream``), and hands the kernel's name and
metrics to the sessions' backends that listen. ``configure(include=, exclude=)`` limits it to
kernels whose name matches ``include`` (``re.match``) and does not match ``exclude``; a kernel
left out is still profiled, under its own name, without metadata metrics. One instance per
process, as in Proton (``LaunchHook() is LaunchHook()``).
"""

from __future__ import annotations

import itertools
import re
from contextvars import ContextVar
from typing import Any, Protocol

from deuteron.collect.context.state import (
    COMPUTE_METADATA_SCOPE_NAME,
    metadata_state,
    metric_state_name,
    state,
)
from deuteron.collect.deferred import is_metric_value, transform_tensor_metrics
from deuteron.collect.hook_manager import Hook

__all__ = ["COMPUTE_METADATA_SCOPE_NAME", "LaunchHook", "LaunchListener", "id", "op_name"]

# Proton's: the id and name of the launch the calling context is in (set by each hooked launch)
id: ContextVar[int | None] = ContextVar("id", default=None)  # noqa: A001 - Proton's name
op_name: ContextVar[str | None] = ContextVar("op_name", default=None)
_op: ContextVar[str | None] = ContextVar("_op", default=None)  # the name libproton.enter_op gave
_ids = itertools.count()
_in_hook: ContextVar[bool] = ContextVar("deuteron_in_launch_hook", default=False)
_entered: ContextVar[bool] = ContextVar("deuteron_launch_entered", default=False)
RESERVED = frozenset({"name", "function", "stream"})  # what Triton always puts in the metadata


class LaunchListener(Protocol):
    """A backend that files the next launch of the calling thread with these metrics."""

    def launch_entered(self, name: str, metrics: dict[str, Any]) -> None: ...

    def launch_exited(self) -> None: ...


class LaunchHook(Hook):
    """The process's one launch hook (see the module's text), shared by every ``hook="triton"`` session.

    ``__new__`` returns the same object with its filters and listeners kept, as Proton's does: code
    configures ``LaunchHook()`` once and passes another ``LaunchHook()`` to ``start``. Context
    variables, not attributes, carry the per-launch state, so threads and asyncio tasks never mix it.
    """

    priority = 100  # first in, last out: other hooks run inside its metadata
    _instance: LaunchHook | None = None

    _include: re.Pattern[str] | None
    _exclude: re.Pattern[str] | None
    _listeners: list[LaunchListener]

    def __new__(cls, *args: Any, **kwargs: Any) -> LaunchHook:
        if cls._instance is None:
            made = super().__new__(cls)
            made._include = made._exclude = None
            made._listeners = []
            cls._instance = made
        return cls._instance

    def configure(self, *, include: str | None = None, exclude: str | None = None) -> None:
        """Regexes over the kernel's name (matched at its start, as Proton does)."""
        self._include = re.compile(include) if include else None
        self._exclude = re.compile(exclude) if exclude else None

    def matches(self, kernel_name: str | None) -> bool:
        if kernel_name is None:
            return True
        if self._include is not None and self._include.match(kernel_name) is None:
            return False
        return not (self._exclude is not None and self._exclude.match(kernel_name) is not None)

    # --- listeners (the backends of sessions with hook="triton") --------------------------------

    def subscribe(self, listener: LaunchListener) -> None:
        if listener not in self._listeners:
            self._listeners.append(listener)

    def unsubscribe(self, listener: LaunchListener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    # --- Hook ----------------------------------------------------------------------------------

    def init_handle(
        self, module: Any, function: Any, name: str, metadata_group: dict[str, str], hash: str
    ) -> None:
        return None  # nothing to prepare per kernel: the metadata is read at each launch

    def activate(self) -> None:
        return None  # turned on and off by the manager's list of active hooks

    def deactivate(self) -> None:
        return None

    def enter(self, metadata: Any) -> None:
        if _in_hook.get() or not self._listeners:
            return
        raw = getattr(metadata, "data", metadata)
        raw_name = raw.get("name") if isinstance(raw, dict) else None
        if not self.matches(raw_name):
            return
        token = _in_hook.set(True)  # a launch inside the metadata function is not hooked again
        try:
            with metadata_state(raw_name):
                data = (
                    metadata.get()
                    if hasattr(metadata, "get") and not isinstance(metadata, dict)
                    else metadata
                )
                name = data.get("name", raw_name)
                if not self.matches(name):
                    return
                values = {k: v for k, v in data.items() if k not in RESERVED and is_metric_value(v)}
                if _op.get() is not None and name == raw_name and not values:
                    return  # nothing of its own to say: the op enter_op opened names it
                with state(metric_state_name(raw_name)):  # copies of device values: <metric>
                    scalars, tensors = transform_tensor_metrics(values)
            for listener in list(self._listeners):
                listener.launch_entered(str(name), {**scalars, **tensors})
            id.set(next(_ids))
            op_name.set(str(name))
            _entered.set(True)
        finally:
            _in_hook.reset(token)

    def exit(self, metadata: Any) -> None:
        if _in_hook.get() or not _entered.get():
            return
        _entered.set(False)
        for listener in list(self._listeners):
            listener.launch_exited()

    def enter_op(self, name: str) -> None:
        """Proton's ``libproton.enter_op``: launches on this thread are filed under ``name`` (as a
        ``launch_metadata`` name would file them; the CUPTI backend names the next one) by the
        sessions that listen (``hook="triton"``), unless a kernel's own metadata names it."""
        for listener in list(self._listeners):
            listener.launch_entered(name, {})
        op_name.set(name)
        _op.set(name)

    def exit_op(self) -> None:
        """Proton's ``libproton.exit_op``: launches are named by their kernels again."""
        for listener in list(self._listeners):
            listener.launch_exited()
        op_name.set(None)
        _op.set(None)
