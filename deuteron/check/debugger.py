"""``deuteron check --pdb``: stop in pdb at a finding, in the kernel's frame, with the lanes at hand.

Triton's interpreter runs a kernel as Python, so when a check finds something during a program the
kernel's frame is on the stack: pdb is entered there (``l``, ``p x``, ``n`` work on the kernel's
source and locals). The namespace pdb evaluates in is a copy of the frame's locals with every
interpreter tensor turned into a NumPy array shaped like its block (a scalar into a number), plus
the finding's context (:func:`context`): ``finding``, ``pid``, ``bad_lanes``, ``offsets``,
``mask``, ``value``, ``addresses``, ``why`` (those the finding has); ``arr(x)`` turns any interpreter
tensor into NumPy, and
``ctx`` holds the whole context (a kernel local keeps its name; the context's value of a name the
kernel also uses is only in ``ctx``). A finding made at a load stops once the load is done, so
``value`` is what the kernel got (``other`` where lanes were masked off). Findings made when every
program has run (read/write races, locks never released, coverage) have no kernel frame: pdb
stops where the kernel was launched, and the banner says so.

Which findings stop: ``--pdb`` (level ``error``) the first occurrence of each error finding (each
(kind, kernel, line, tensor) group, as the report groups them); ``--pdb=warning`` errors and
warnings; ``--pdb=all`` every finding. ``c`` goes on to the next one, ``q`` stops the run (under
pytest: the session, as pytest's own pdb does).
"""

from __future__ import annotations

import bdb
import pdb
import sys
from types import FrameType, SimpleNamespace
from typing import Any

import numpy as np

from deuteron.check.errors import CheckError
from deuteron.check.findings import current_test
from deuteron.check.guard import GUARD
from deuteron.model.access import ACCESS_NAMES, ADDRESS_MASK, LOAD, Access, LaunchInfo
from deuteron.model.finding import SEVERITIES, Finding, severity_rank
from deuteron.process.terminal import short_path
from deuteron.triton.interpreter import checking, sites
from deuteron.triton.interpreter.printing import as_array, is_tensor

LEVELS = ("error", "warning", "all")
# Findings made while judging the access in progress (a load, store or atomic): its lanes are the
# context. An assert's are its condition's; the others are made when the launch is over.
AT_ACCESS = ("out-of-bounds", "outside-view", "race", "nan", "lock")
AT_LOADS = ("out-of-bounds", "outside-view")  # the only ones a load can make
CONTEXT_NAMES = ("finding", "pid", "bad_lanes", "offsets", "mask", "value", "addresses", "why")


def level_of(text: str) -> str:
    if text not in LEVELS:
        raise CheckError(f"--pdb={text}: choose --pdb (errors), --pdb=warning or --pdb=all")
    return text


class Debugger:
    """Hears each new finding (``Findings.on_new``) and stops in pdb at those at or above its level.

    ``checker`` is the session's :class:`~deuteron.check.checker.Checker`: its ``launch`` says whether
    a program is running (a kernel frame to stop in) and its ``pids`` which program it is."""

    def __init__(self, level: str, checker: Any, fail_fast: bool = False) -> None:
        self.rank = len(SEVERITIES) - 1 if level_of(level) == "all" else severity_rank(level)
        self.checker = checker
        self.fail_fast = fail_fast
        self.quit = False
        self.stops = 0
        self.pending: list[tuple[Finding, dict[str, Any], FrameType | None]] = []

    def found(self, finding: Finding) -> None:
        if self.quit or severity_rank(finding.severity) > self.rank:
            return
        live = self.checker.launch is not None
        frame = sites.user_frame()
        names = context(finding, self.checker, live)
        current = GUARD.current
        waits = live and current is not None and current.kind == LOAD and finding.kind in AT_LOADS
        if waits and not (self.fail_fast and finding.severity == "error"):
            self.pending.append((finding, names, frame))  # stopped once the load is made
            if len(self.pending) == 1:
                checking.after_next_load(self._loaded)
            return
        self.stop(finding, names, frame, live)

    def _loaded(self, values: np.ndarray) -> None:
        pending, self.pending = self.pending, []
        for finding, names, frame in pending:
            names["value"] = values
            self.stop(finding, names, frame, True)

    def stop(self, finding: Finding, names: dict[str, Any], frame: FrameType | None, live: bool) -> None:
        """Enter pdb at ``frame`` (the kernel's, or the launch's caller) with the banner first."""
        if frame is None or self.quit:
            return
        self.stops += 1
        capture = _pytest_capture()
        _suspend(capture)  # first: pdb takes sys.stdin as it is when made
        debugger = KernelPdb(names, frame, capture)
        try:
            debugger.message(banner(finding, names, frame, live))
        except BaseException:
            _resume(capture)
            raise
        debugger.start(frame)  # gives the capture back as the user goes on
        if debugger.quitting:
            self.quit = True
            quit_run()


def quit_run() -> None:
    """``q`` in pdb: the run stops. Under pytest the session stops (``pytest.exit``, as pytest's own
    pdb quits), elsewhere ``BdbQuit`` ends the program; the report covers what ran until then."""
    pytest = sys.modules.get("pytest")
    if pytest is not None and current_test() and hasattr(pytest, "exit"):
        pytest.exit("quit in pdb (deuteron check --pdb)")
    raise bdb.BdbQuit


class KernelPdb(pdb.Pdb):
    """pdb on a live kernel frame: evaluates in a NumPy view of the frame's locals (see the module's
    text), and gives pytest's output capture back only when the user goes on (not while stepping)."""

    def __init__(self, names: dict[str, Any], frame: FrameType, capture: Any) -> None:
        super().__init__(nosigint=True)
        self.names = names
        self.stop_frame = frame
        self.capture = capture
        self._view: dict[str, Any] = {}
        self._view_of: FrameType | None = None

    @property  # type: ignore[override]
    def curframe_locals(self) -> dict[str, Any]:
        frame = getattr(self, "curframe", None)
        if frame is None:
            return {}
        if self._view_of is not frame:
            self._view = namespace(frame, self.names if frame is self.stop_frame else {})
            self._view_of = frame
        return self._view

    @curframe_locals.setter
    def curframe_locals(self, value: Any) -> None:
        self._view_of = None  # pdb moved to a frame, or stopped again: the view is made afresh

    def start(self, frame: FrameType) -> None:
        """Stop now at ``frame`` (as ``set_trace`` would at its next line), and keep tracing only if
        the user asked to step or set a breakpoint."""
        self.reset()
        f: FrameType | None = frame
        while f is not None:
            f.f_trace = self.trace_dispatch
            self.botframe = f
            f = f.f_back
        self.interaction(frame, None)
        if not self.quitting and (self.breaks or self.stopframe is not self.botframe):
            sys.settrace(self.trace_dispatch)

    def interaction(self, frame: Any, traceback: Any) -> None:
        _suspend(self.capture)
        super().interaction(frame, traceback)
        if self.quitting or (self.stopframe is self.botframe and not self.breaks):
            _resume(self.capture)


def context(finding: Finding, checker: Any, live: bool) -> dict[str, Any]:
    """The names a stop gives the user, from what the guard was judging when the finding was made."""
    launch: LaunchInfo | None = checker.launch
    pid = finding.program or (checker.pids[-1] if live and checker.pids else None)
    names: dict[str, Any] = {"finding": finding, "pid": pid, "why": finding.message}
    access = GUARD.current if live and finding.kind in AT_ACCESS else None
    if access is None or launch is None:
        if live and finding.kind == "assert" and GUARD.failing is not None:
            names["bad_lanes"] = GUARD.failing
        elif finding.details.get("element_offsets"):  # found at the end: the offsets the finding names
            names["offsets"] = np.array(finding.details["element_offsets"])
        return names
    shape = access.addresses.shape
    real = access.addresses & np.uint64(ADDRESS_MASK)
    names["addresses"] = real
    names["mask"] = None if access.mask is None else np.broadcast_to(access.mask, shape)
    if access.values is not None:
        names["value"] = np.broadcast_to(access.values, shape)
    tensor = next((t for t in launch.tensors if t.name == finding.tensor), None)
    if tensor is not None:
        names["offsets"] = (real.astype(np.int64) - np.int64(tensor.data_ptr)) // tensor.element_size
    part = GUARD.part
    if finding.kind in ("out-of-bounds", "outside-view") and part is not None and part.mask is not None:
        names["bad_lanes"] = part.mask
    elif finding.kind == "assert" and GUARD.failing is not None:
        names["bad_lanes"] = GUARD.failing
    elif finding.kind == "nan" and "value" in names and names["value"].dtype.kind == "f":
        bad = ~np.isfinite(names["value"])
        names["bad_lanes"] = bad if names["mask"] is None else bad & names["mask"]
    elif finding.kind == "race" and "offsets" in names:
        shown = finding.details.get("element_offsets") or []
        names["bad_lanes"] = np.isin(names["offsets"], shown) & _active(access)
    return names


def _active(access: Access) -> np.ndarray:
    shape = access.addresses.shape
    return np.ones(shape, dtype=bool) if access.mask is None else np.broadcast_to(access.mask, shape)


def namespace(frame: FrameType, names: dict[str, Any]) -> dict[str, Any]:
    """What pdb evaluates in: the frame's locals (tensors as NumPy), then the context's names the
    kernel does not use itself, ``arr`` and ``ctx``. A copy: assigning here changes nothing in the kernel."""
    view = {k: as_array(v) if is_tensor(v) else v for k, v in frame.f_locals.items()}
    for key, value in names.items():
        view.setdefault(key, value)
    view.setdefault("arr", as_array)
    view.setdefault("ctx", SimpleNamespace(**names))
    return view


def _describe(name: str, value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"{name} ({value.dtype}, shape {value.shape})"
    return f"{name}={value!r}" if isinstance(value, tuple) else name


def banner(finding: Finding, names: dict[str, Any], frame: FrameType, live: bool) -> str:
    """Say what was found, where pdb stops and which name holds what."""
    where = f"{short_path(finding.file)}:{finding.line}"
    index = f", {finding.tensor}{list(finding.index)}" if finding.tensor and finding.index else ""
    program = f", program {finding.program}" if finding.program else ""
    launch = f" (launch {finding.launch})" if finding.launch else ""
    test = current_test()
    lines = [
        f"deuteron check --pdb: {finding.severity} {finding.kind} in {finding.kernel} at {where}"
        f"{program}{index}{launch}",
        f"  {finding.message}",
    ]
    if test:
        lines.append(f"  launched by the test {test}")
    bad = names.get("bad_lanes")
    if isinstance(bad, np.ndarray) and bad.size:
        lane_indices = np.argwhere(bad)
        shown = ", ".join(
            str(tuple(int(i) for i in lane)) if bad.ndim > 1 else str(int(lane[0]))
            for lane in lane_indices[:4]
        )
        more = f" and {len(lane_indices) - 4} more" if len(lane_indices) > 4 else ""
        offsets = names.get("offsets")
        at = ""
        if isinstance(offsets, np.ndarray) and offsets.shape == bad.shape:
            at = f"; their offsets in {finding.tensor}: {offsets[bad][:4].tolist()}"
        lines.append(f"  bad lanes: {len(lane_indices)} of {bad.size}: lane {shown}{more}{at}")
    if not live:
        lines.append(
            "  found when every program of the launch had run: no kernel frame is live, so pdb "
            "stops where the kernel was launched"
        )
    elif frame.f_code.co_name != finding.kernel and sites.is_kernel_code(frame.f_code):
        lines.append(f"  pdb stops in {frame.f_code.co_name}, the @jit function {finding.kernel} called")
    held = [n for n in CONTEXT_NAMES if n in names]
    shadowed = [n for n in held if n in frame.f_locals]
    shown_names = ", ".join(_describe(n, names[n]) for n in held if n not in shadowed)
    lines.append(f"  names: {shown_names}; ctx holds them all")
    if shadowed:
        lines.append(
            f"  {', '.join(shadowed)}: the kernel's own; the finding's are ctx.{', ctx.'.join(shadowed)}"
        )
    kernel_locals = [k for k, v in frame.f_locals.items() if is_tensor(v)] if live else []
    if kernel_locals:
        lines.append(
            f"  the kernel's locals as NumPy arrays: {', '.join(kernel_locals)}; arr(x) for any other tensor"
        )
    if live and finding.kind in ("out-of-bounds",) and names.get("mask") is not None:
        lines.append("  bad lanes are masked off before memory is touched: the kernel goes on")
    current = GUARD.current
    what = ACCESS_NAMES[current.kind] if live and current is not None and finding.kind in AT_LOADS else ""
    if what == "load" and "value" in names:
        lines.append("  value: what the load gave the kernel (other, or 0, at masked-off lanes)")
    step = "; n: the kernel's next line" if live else ""
    lines.append(f"  c: on to the next finding{step}; q: stop the run")
    return "\n".join(lines)


def _pytest_capture() -> Any:
    """pytest's capture manager when the finding comes from a test (its output and stdin are
    captured then: pdb needs the terminal), else None."""
    debugging = sys.modules.get("_pytest.debugging")
    manager = getattr(getattr(debugging, "pytestPDB", None), "_pluginmanager", None)
    if manager is None:
        return None
    try:
        return manager.getplugin("capturemanager")
    except Exception:  # an unfamiliar pytest: no capture to lift
        return None


def _suspend(capture: Any) -> None:
    if capture is not None and hasattr(capture, "suspend"):
        capture.suspend(in_=True)


def _resume(capture: Any) -> None:
    if capture is not None and hasattr(capture, "resume"):
        capture.resume()
