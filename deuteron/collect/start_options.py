"""What ``start()`` and ``profile()`` accept, checked before any session opens: the data kind
(``tree`` or ``trace``), Proton's modes (periodic flushing, PC sampling, instrumentation), and the
``hook=`` argument. Refusals are one line (``SessionError``): a clear refusal beats a profile that
silently lacks what was asked for."""

from __future__ import annotations

import os
from typing import Any

from deuteron.collect.hook_manager import Hook
from deuteron.collect.instrumentation_hook import InstrumentationHook
from deuteron.collect.launch_hook import LaunchHook
from deuteron.collect.modes import MODE_NAMES as INSTRUMENTATION_MODES
from deuteron.collect.modes import InstrumentationMode, sampling_interval
from deuteron.collect.output import OUTPUT_FORMATS
from deuteron.collect.registry import SessionError
from deuteron.triton import proton_knob

DISABLE_VARIABLES = ("DEUTERON_DISABLE", "TRITON_PROTON_DISABLE")  # ours, and Proton's (same meaning)
DISABLED_OFF = ("", "0", "false", "no")  # values that leave profiling on


def disabled_by() -> str | None:
    """What turns profiling off (a variable's name, or Proton's knob), None while it is on."""
    for name in DISABLE_VARIABLES:
        if os.environ.get(name, "").strip().lower() not in DISABLED_OFF:
            return name
    return "triton.knobs.proton.disable" if proton_knob("disable") is True else None


def disabled() -> bool:
    return disabled_by() is not None


DATA_FORMATS = {"tree": "hatchet", "trace": "chrome_trace"}  # what finalize() writes by default


def data_format(data: str | None) -> str:
    """The format ``finalize()`` writes for Proton's ``data=``."""
    fmt = DATA_FORMATS.get(data or "tree")
    if fmt is None:
        raise SessionError(f"unknown data {data!r}; choose one of: {', '.join(DATA_FORMATS)}")
    return fmt


PERIODIC_FLUSHING = "periodic_flushing"


def check_mode(mode: Any, backend: str = "auto") -> str | None:
    """The mode's flush format for ``periodic_flushing`` (each completed phase written to
    ``NAME.part_<phase>.<format>`` and dropped from memory), None for the default mode. The
    instrumentation backend checks its own modes, the CUPTI backend PC sampling's; any other mode
    is refused: a clear refusal beats a profile that silently lacks what was asked for."""
    if mode is None or mode == "":
        return None
    if "instrumentation" in str(backend):
        return None
    try:
        if sampling_interval(mode) is not None:
            return None  # PC sampling: the CUPTI backend takes it (backends.resolve)
    except ValueError as exc:
        raise SessionError(str(exc)) from None
    if isinstance(mode, InstrumentationMode) or (
        isinstance(mode, str) and mode.split(":", 1)[0] in INSTRUMENTATION_MODES
    ):
        raise SessionError(
            f"mode {str(mode).split(':', 1)[0]!r} instruments kernels: start with backend='instrumentation'"
            " (or 'cupti,instrumentation' for kernel times too)"
        )
    if isinstance(mode, str) and mode.split(":", 1)[0] == PERIODIC_FLUSHING:
        options = dict(mode_option(part) for part in mode.split(":")[1:])
        unknown = set(options) - {"format"}
        if unknown:
            raise SessionError(f"unknown {PERIODIC_FLUSHING} option {sorted(unknown)[0]!r}; it takes format=")
        fmt = options.get("format", "hatchet")
        if fmt not in OUTPUT_FORMATS:
            choices = ", ".join(OUTPUT_FORMATS)
            raise SessionError(f"unknown {PERIODIC_FLUSHING} format {fmt!r}; choose one of: {choices}")
        return fmt
    text = str(mode).split(":", 1)[0] if isinstance(mode, str) else type(mode).__name__
    raise SessionError(
        f"mode {text!r} is not supported by Deuteron (the default mode, pcsampling and {PERIODIC_FLUSHING}); "
        "start without mode="
    )


def mode_option(part: str) -> tuple[str, str]:
    key, sep, value = part.partition("=")
    if not sep:
        raise SessionError(f"malformed mode option {part!r}; write it as key=value")
    return key.strip(), value.strip()


def hook_choice(hook: Any) -> tuple[str | None, Hook | None]:
    """A ``hook=`` argument as (the session's hook word, a program's own Hook to register).

    ``"triton"`` or a ``LaunchHook`` (ours or Proton's): launch metadata. Any other
    :class:`deuteron.hooks.Hook` is the program's own and is called around every launch. An
    ``InstrumentationHook`` is refused in one line: the instrumentation backend makes its own."""
    if hook is None or hook == "":
        return None, None
    kind = type(hook).__name__
    if hook == "triton" or isinstance(hook, LaunchHook) or kind == "LaunchHook":
        return "triton", None
    if isinstance(hook, InstrumentationHook) or kind == "InstrumentationHook":
        raise SessionError(
            "an InstrumentationHook is made by the backend: "
            "start with backend='instrumentation' and mode=, not hook="
        )
    if isinstance(hook, Hook):
        return None, hook
    raise SessionError(f"unknown hook {hook!r}; choose None, 'triton' or a deuteron.hooks.Hook object")
