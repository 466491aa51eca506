"""Device-function calls in Triton's interpreter, mended so the language is left as it was found.

Part of the ``interpreter`` hook group (see :mod:`.interpreter`), applied while Deuteron profiles or
checks interpreted launches.
"""

from __future__ import annotations

from typing import Any

from deuteron.process.patches import AttributePatch, Patch


def mend(interp: Any) -> list[Patch]:
    """Triton's ``InterpretedFunction.__call__`` (a device-function call: ``tl.max``, a user's @jit
    helper) patches ``triton.language`` through ``_patch_lang`` and never restores it, so after any
    interpreted launch a compile in the same process fails (``deuteron.check.run`` followed by
    ``deuteron.explain.run``, say). The mend:

    - inside a launch, patches the language for a device call's module once (the first call from
      that module; later calls would only swap in equivalent functions), and restores those patches,
      last first, just before the launch restores its own scope (``GridExecutor`` takes its scope
      from ``_patch_lang`` too and restores it in a ``finally``);
    - outside any launch, restores a device call's patches when it returns.

    So the language is left as it was found, and a launch with many device calls does less work
    than without Deuteron. Triton's own function bodies are untouched."""
    patch_lang = getattr(interp, "_patch_lang", None)
    call = interp.InterpretedFunction.__dict__.get("__call__")
    if patch_lang is None or call is None:
        return []
    pending: list[Any] = []  # device-call scopes not restored yet, oldest first
    patched: set[int] = set()  # modules (by globals) whose device calls this launch has patched for
    depth = {"calls": 0, "launches": 0}

    class Unchanged:
        """A scope with nothing to restore: a device call from a module this launch has already
        patched the language for (one shared instance; no state)."""

        def restore(self) -> None:
            pass

    unchanged = Unchanged()

    class LaunchScope:
        """A launch's scope: restoring it restores the device calls' scopes made inside it first."""

        def __init__(self, scope: Any) -> None:
            self.scope, self.mark = scope, len(pending)

        def restore(self) -> None:
            depth["launches"] -= 1
            while len(pending) > self.mark:
                pending.pop().restore()
            if not depth["launches"]:
                patched.clear()
            self.scope.restore()

    def _patch_lang(fn: Any) -> Any:
        if not depth["calls"]:
            scope = patch_lang(fn)
            depth["launches"] += 1
            return LaunchScope(scope)
        if depth["launches"]:
            module = id(getattr(fn, "__globals__", fn))
            if module in patched:
                return unchanged
            patched.add(module)
        scope = patch_lang(fn)
        pending.append(scope)
        return scope

    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        mark = len(pending)
        depth["calls"] += 1
        try:
            return call(self, *args, **kwargs)
        finally:
            depth["calls"] -= 1
            if not depth["launches"]:  # no launch will restore it
                while len(pending) > mark:
                    pending.pop().restore()

    return [
        AttributePatch(interp, "_patch_lang", _patch_lang),
        AttributePatch(interp.InterpretedFunction, "__call__", __call__),
    ]
