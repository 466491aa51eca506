"""``deuteron.profile``: a block or a function profiled, as a context manager (notebooks) or as
Proton's decorator, and the profile shown (``show``, or inline in a notebook).

It lives with the views, not in ``collect/``: it is where a finished profile meets its renderers
(the collector imports nothing of ``view/``); the profiling itself is ``collect.lifecycle``'s."""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deuteron.collect import registry
from deuteron.collect.lifecycle import activate, current_profile, deactivate, finalize, start, start_session
from deuteron.collect.registry import SessionError
from deuteron.collect.start_options import check_mode, data_format, hook_choice
from deuteron.model.tree import Profile


class profile:
    """Profile a block or a function.

    As a context manager (for notebooks): ``with deuteron.profile() as p: ...`` then ``p.result``
    is the Profile and ``p.show()`` prints it; ``output_format="hatchet"`` also writes the file.

    As Proton's decorator, bare (``@deuteron.profile``) or with Proton's options
    (``@deuteron.profile(name="run", context="python")``): each call starts a session (once) and
    deactivates it when the function returns; ``finalize()`` writes it, as in Proton.
    """

    def __init__(
        self,
        func: Any = None,
        *,
        name: str | None = None,
        backend: str | None = "auto",
        context: str | None = "shadow",
        data: str | None = "tree",
        mode: Any = None,
        hook: Any = None,
        output_format: str | None = None,
    ) -> None:
        if isinstance(func, str):  # deuteron.profile("name", ...): the name, given by position
            func, name = None, func
        self.name = name
        hook_choice(hook)  # a bad hook is refused where it is written, not at the first call
        self.options = {
            "backend": backend or "auto",
            "context": context or "shadow",
            "hook": hook,
        }
        self.data, self.mode = data, mode
        self.output_format = output_format
        self.session: int | None = None
        self.result: Profile | None = None
        self.files: list[Path] = []
        self._func: Callable[..., Any] | None = None
        if func is not None:
            self._wrap(func)

    def __enter__(self) -> profile:
        flush_format = check_mode(self.mode, str(self.options["backend"]))
        data_format(self.data)
        outputs = tuple(f.strip() for f in (self.output_format or "").split(",") if f.strip())
        self.session = start_session(
            self.name,
            outputs=outputs,
            flush_format=flush_format,
            mode=self.mode,
            **self.options,
        )
        self.result = current_profile(self.session) if self.session is not None else None
        return self

    def __exit__(self, *exc: object) -> None:
        if self.session is not None:
            self.files = finalize(self.session, self.output_format)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._func is not None:  # the bare decorator's wrapped function, being called
            return self._call(*args, **kwargs)
        (func,) = args
        return profile(
            func,
            name=self.name,
            data=self.data,
            mode=self.mode,
            output_format=self.output_format,
            **self.options,
        )

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        """A decorated method binds to its instance, as a function would."""
        return self if obj is None or self._func is None else types.MethodType(self, obj)

    def _wrap(self, func: Callable[..., Any]) -> None:
        self._func = func
        functools.update_wrapper(self, func)  # type: ignore[arg-type]

    def _call(self, *args: Any, **kwargs: Any) -> Any:
        """Proton's decorator: the session starts with the first call and is made active for each
        call; it is written by ``finalize()`` (or at exit), not when the function returns."""
        if self.session is None or self.session not in registry.sessions:
            self.session = start(self.name, data=self.data, mode=self.mode, **self.options)
            self.result = current_profile(self.session) if self.session is not None else None
        else:
            activate(self.session)
        assert self._func is not None
        try:
            return self._func(*args, **kwargs)
        finally:
            if self.session is not None and self.session in registry.sessions:
                deactivate(self.session)

    def _repr_html_(self) -> str | None:
        """In a notebook: the profile as the web UI's flame graph and tree table, inline."""
        if self.result is None:
            return None
        from deuteron.render.notebook import profile_html

        return profile_html(self.result, self.name or "profile")

    def show(self, metrics: str = "time/ms", device: str | None = None, file: Any = None) -> None:
        """Print the tree as ``deuteron view -m METRICS [--device DEVICE]`` would."""
        if self.result is None:
            raise SessionError("nothing profiled yet (Deuteron disabled, or the block has not run)")
        from deuteron.render.console import render_profile
        from deuteron.view.build import columns_of

        view = columns_of(self.result, [m for m in metrics.split(",") if m.strip()], device=device)
        render_profile(view.tree, view.columns, file=file)
