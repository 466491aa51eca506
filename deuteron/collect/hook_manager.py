"""Proton's hook protocol and its manager: objects Triton calls around each kernel launch.

A :class:`Hook` is told when a kernel is loaded and unloaded, and when each launch begins and
ends (``enter``/``exit`` receive Triton's ``LazyDict`` of launch metadata). Sessions register
hooks with :class:`HookManager`; a hook is *active* while any session that uses it is active, and
only active hooks are called. The manager puts its own four entry points into Triton's hook
chains (``knobs.runtime``) while any hook is active, and takes them out after the last one goes,
through Deuteron's one patch manager (group ``launch_hook``). Under Triton's interpreter the same
chains are called around each interpreted launch, so a hook sees the same calls with or without a
GPU.

The class-level ``active_hooks`` and ``session_hooks`` are Proton's, read by code that inspects
the manager.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from deuteron.triton.runtime import launch_hooks


class Hook:
    """One hook: higher ``priority`` is called first on ``enter`` and last on ``exit``."""

    priority: int = 0

    def init_handle(
        self, module: Any, function: Any, name: str, metadata_group: dict[str, str], hash: str
    ) -> None:
        raise NotImplementedError

    def destroy_handle(
        self, module: Any, function: Any, name: str, metadata_group: dict[str, str], hash: str
    ) -> None:
        return None

    def enter(self, metadata: Any) -> None:
        raise NotImplementedError

    def exit(self, metadata: Any) -> None:
        raise NotImplementedError

    def activate(self) -> None:
        raise NotImplementedError

    def deactivate(self) -> None:
        raise NotImplementedError


def _by_session() -> defaultdict[Hook, bool]:
    return defaultdict(bool)


class HookManager:
    """Which hooks each session uses, which are active, and the calls into them."""

    active_hooks: list[Hook] = []
    # session id -> (hook -> whether that session currently uses it actively)
    session_hooks: defaultdict[int, defaultdict[Hook, bool]] = defaultdict(_by_session)

    # --- Triton's calls, passed on to the active hooks ------------------------------------------

    @staticmethod
    def init_handle(module: Any, function: Any, name: str, metadata_group: dict[str, str], hash: str) -> None:
        for hook in list(HookManager.active_hooks):
            hook.init_handle(module, function, name, metadata_group, hash)

    @staticmethod
    def destroy_handle(
        module: Any, function: Any, name: str, metadata_group: dict[str, str], hash: str
    ) -> None:
        for hook in reversed(list(HookManager.active_hooks)):
            hook.destroy_handle(module, function, name, metadata_group, hash)

    @staticmethod
    def enter(metadata: Any) -> None:
        for hook in list(HookManager.active_hooks):
            hook.enter(metadata)

    @staticmethod
    def exit(metadata: Any) -> None:
        for hook in reversed(list(HookManager.active_hooks)):  # first in, last out
            hook.exit(metadata)

    # --- sessions --------------------------------------------------------------------------------

    @staticmethod
    def _sort() -> None:
        HookManager.active_hooks.sort(key=lambda h: h.priority, reverse=True)

    @staticmethod
    def _turn_on(hook: Hook) -> None:
        if hook not in HookManager.active_hooks:
            hook.activate()
            HookManager.active_hooks.append(hook)
            HookManager._sort()
        launch_hooks.install_heads(
            HookManager.enter, HookManager.exit, HookManager.init_handle, HookManager.destroy_handle
        )

    @staticmethod
    def _turn_off_unused(hooks: set[Hook]) -> None:
        """Deactivate each of ``hooks`` no session uses actively any more."""
        for hook in hooks:
            if hook in HookManager.active_hooks and not any(
                uses.get(hook, False) for uses in HookManager.session_hooks.values()
            ):
                hook.deactivate()
                HookManager.active_hooks.remove(hook)
        if not HookManager.active_hooks:
            launch_hooks.remove_heads()

    @staticmethod
    def register(hook: Hook, session: int) -> None:
        """``session`` uses ``hook`` (and is active): the hook is turned on if it was not."""
        HookManager.session_hooks[session][hook] = True
        HookManager._turn_on(hook)

    @staticmethod
    def unregister(session: int | None = None) -> None:
        """``session`` (None: every session) is done with its hooks."""
        if session is None:
            for hook in list(HookManager.active_hooks):
                hook.deactivate()
            HookManager.active_hooks.clear()
            HookManager.session_hooks.clear()
            launch_hooks.remove_heads()
            return
        if session not in HookManager.session_hooks:
            return
        used = HookManager.session_hooks.pop(session)
        HookManager._turn_off_unused({h for h, on in used.items() if on})

    @staticmethod
    def _mark(session: int | None, on: bool) -> set[Hook]:
        """Mark the hooks of ``session`` (None: every session) as used or not; returns them."""
        chosen = list(HookManager.session_hooks) if session is None else [session]
        marked: set[Hook] = set()
        for session_id in chosen:
            uses = HookManager.session_hooks.get(session_id)
            if uses is None:
                continue
            for hook in uses:
                uses[hook] = on
                marked.add(hook)
        return marked

    @staticmethod
    def activate(session: int | None = None) -> None:
        for hook in HookManager._mark(session, True):
            HookManager._turn_on(hook)

    @staticmethod
    def deactivate(session: int | None = None) -> None:
        HookManager._turn_off_unused(HookManager._mark(session, False))
