"""What the timeline opens on, and the lanes it draws over the trace's own: the training steps, each
backward pass, and each thread's role.

**Steps**, as ``deuteron view --advise`` finds them (:mod:`deuteron.view.step_window`): a user's
scope named ``step`` (``train_step``, ``step 3`` too) is a step, span for span; else a step runs
from one end of the optimizer step (``-c torch``'s ``optimizer.step (AdamW)`` span) to the next
(before the first end: set-up, left out), numbered from 1 as ``[steps]`` numbers them; else, a
model called again and again at the top of the main thread (``module (LlamaForCausalLM)``,
``DistributedDataParallel``) marks them, from one call's start to the next. In a job's trace
(several ranks on one clock) the first rank's steps are shown.

**The window it opens on** spans the steady steps: all of them, less the first (warm-up:
compilation, allocator growth, cuDNN's autotuning) when there are three or more; it ends where the
last kernel launched in them ends, so the GPU's tail of the last step is in view.

**Backward passes**: the host spans of the backward, from the threads that run backward nodes (an
autograd thread, below) and the spans under a ``backward`` frame or named so, one span per step
(cut at the steps' bounds; without steps, at a pause ten times the usual one, 1 ms at least).

**Threads' roles**: from the name the trace gives a thread where it says a role (torch's own
thread names: ``pt_autograd_0``, ``pt_nccl_watchdg``, ``pt_data_worker``…), else from what runs
on it: the main thread (named so, or its id is the process'), an autograd thread (most of its
spans lie under a ``backward`` frame, as :func:`deuteron.view.rank_threads.thread_roles` tells it, or it
launches backward kernels), NCCL's watchdog, CUPTI's or deuteron's flush threads, a data loader's
workers. A thread whose role cannot be told keeps its name (``thread 140529113233088``)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from deuteron.formats.chrome_trace import TraceColumns
from deuteron.view.rank_threads import AUTOGRAD, MAIN
from deuteron.view.step_window import KERNEL_CATS

STEP_SCOPE = re.compile(r"^(train(ing)?[_ ])?step([ _#]?\d+)?$", re.IGNORECASE)
OPTIMIZER_STEP = re.compile(r"^optimizer\.step \(.*\)$")
MODULE_CALL = re.compile(r"^(module \(.+\)|[A-Z][A-Za-z0-9_]*)$")
BACKWARD_NAME = re.compile(r"^(backward|.*\.backward|autograd::engine::evaluate_function.*|.*Backward\d*)$")
BACKWARD_KERNEL = re.compile(r"[Bb]ackward|_grad_|autograd")
STEADY_AFTER = 3  # steps from which the first is left out of the opening window (warm-up)
PAUSE_MIN_NS = 1e6  # without steps, a backward pass ends at a pause this long at least

# Thread names that say a role: torch names its own threads (c10::setThreadName), Kineto and
# deuteron theirs.
NAMED_ROLES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^(main ?thread|MainThread)$", re.IGNORECASE), MAIN),
    (re.compile(r"^pt_autograd_(\d+)$"), "autograd thread (device \\1)"),
    (re.compile(r"autograd", re.IGNORECASE), AUTOGRAD),
    (re.compile(r"^pt_nccl_watchdg|nccl.*watchdog|watchdog", re.IGNORECASE), "NCCL watchdog"),
    (re.compile(r"^pt_nccl_heartbt|heartbeat", re.IGNORECASE), "NCCL heartbeat monitor"),
    (re.compile(r"^deuteron-cupti-flush$|cupti", re.IGNORECASE), "CUPTI flush thread"),
    (re.compile(r"^deuteron-flush$"), "deuteron flush thread"),
    (re.compile(r"^pt_data_pin|pin_memory", re.IGNORECASE), "data loader pin-memory thread"),
    (re.compile(r"^pt_data_worker|dataloader|data_worker", re.IGNORECASE), "data loader worker"),
]
# What runs on a thread that says its role, when the trace does not name it.
RUNS_ROLES: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(r"watchdog|ProcessGroupNCCL::(watchdog|workCleanup)|ncclCommWatchdog", re.IGNORECASE),
        "NCCL watchdog",
    ),
    (re.compile(r"heartbeat", re.IGNORECASE), "NCCL heartbeat monitor"),
    (re.compile(r"cupti|activity buffer", re.IGNORECASE), "CUPTI flush thread"),
    (re.compile(r"^deuteron[.:]flush|^flush$"), "deuteron flush thread"),
    (re.compile(r"pin_memory", re.IGNORECASE), "data loader pin-memory thread"),
    (re.compile(r"_worker_loop|__getitem__|collate|DataLoader|fetch", re.IGNORECASE), "data loader worker"),
]
_BARE = re.compile(r"^(thread )?\d+$")


def _rel(x: float, zero: float) -> float:
    return round(float(x) - zero, 3)


def _table(size: int, ids: list[int] | np.ndarray) -> np.ndarray:
    """A lookup table over ids 0..size-1 (and one more: an id out of range reads False), True at
    ``ids``: indexing a column with it is np.isin at a fraction of the cost."""
    out = np.zeros(size + 1, dtype=bool)
    out[np.asarray(ids, dtype=np.int64)] = True
    return out


def _host(c: TraceColumns, lanes: np.ndarray) -> np.ndarray:
    """Events that are not kernels, on the given lanes (a mask over the events)."""
    kernel_cats = [i for i, name in enumerate(c.cats) if name in KERNEL_CATS]
    return ~_table(len(c.cats), kernel_cats)[c.cat] & _table(len(c.lanes), lanes)[c.lane]


def _names(c: TraceColumns, pattern: re.Pattern[str]) -> np.ndarray:
    """Per event: its name matches the pattern (names tested once each, not events)."""
    hits = [i for i, name in enumerate(c.names) if pattern.match(name)]
    return _table(len(c.names), hits)[c.name]


def _per_lane(c: TraceColumns, hit: np.ndarray) -> np.ndarray:
    """Per lane: how many of its events are hits."""
    return np.bincount(c.lane[hit], minlength=len(c.lanes))


def _autograd_lanes(c: TraceColumns) -> np.ndarray:
    """Per lane: a thread most of whose spans lie under a ``backward`` frame, the rule of
    :func:`deuteron.view.rank_threads.thread_roles` (counted here in one pass over the events)."""
    if len(c.stack) != len(c.start):
        return np.zeros(len(c.lanes), dtype=bool)
    under = _table(len(c.stacks), [i for i, st in enumerate(c.stacks) if "backward" in st])[c.stack]
    every = np.bincount(c.lane.astype(np.int64), minlength=len(c.lanes))
    return (every > 0) & (_per_lane(c, under) > every * 0.5)


def _outermost(starts: np.ndarray, ends: np.ndarray) -> list[tuple[float, float]]:
    """The spans not inside an earlier one, in start order."""
    out: list[tuple[float, float]] = []
    for s, e in sorted(zip(starts.tolist(), ends.tolist(), strict=True)):
        if out and e <= out[-1][1]:
            continue
        out.append((s, e))
    return out


def find_steps(
    c: TraceColumns, lanes: np.ndarray, main_lanes: np.ndarray
) -> tuple[list[tuple[float, float]], str]:
    """The steps (start, end ns on the trace's clock) on the given lanes and how they were found
    (see the module); [] and "" when there are none."""
    host = _host(c, lanes)
    ends = c.start + c.dur
    scoped = host & _names(c, STEP_SCOPE)
    if scoped.any():
        steps = _outermost(c.start[scoped], ends[scoped])
        return steps, "the scopes named step"
    marked = host & _names(c, OPTIMIZER_STEP)
    if marked.sum() >= 2:
        done = np.unique(ends[marked])
        how = f"from one end of {c.names[int(c.name[np.flatnonzero(marked)[0]])]} to the next"
        return [(float(a), float(b)) for a, b in zip(done[:-1], done[1:], strict=True)], how
    # A model called again and again at the top of the main thread.
    on_main_thread = _table(len(c.lanes), main_lanes)[c.lane]
    on_main = host & on_main_thread & _names(c, MODULE_CALL)
    if not on_main.any():
        return [], ""
    # The main thread's outermost spans (events are in start order): none open when they start.
    rows = np.flatnonzero(on_main_thread & host)
    reach = np.concatenate(([-np.inf], np.maximum.accumulate(ends[rows])[:-1]))
    depth0 = np.zeros(len(c.start), dtype=bool)
    depth0[rows[c.start[rows] >= reach]] = True
    calls = on_main & depth0
    if not calls.any():
        return [], ""
    ids, counts = np.unique(c.name[calls], return_counts=True)
    if counts.max() < 2:
        return [], ""
    model = int(ids[int(np.argmax(counts))])
    starts = np.sort(c.start[calls & (c.name == model)])
    how = f"from one call of {c.names[model]} to the next"
    return [(float(a), float(b)) for a, b in zip(starts[:-1], starts[1:], strict=True)], how


def steady_window(
    c: TraceColumns, steps: list[tuple[float, float]], lanes: np.ndarray
) -> tuple[float, float] | None:
    """The window of the steady steps (see the module): from the first steady step's start to the
    end of its last step or of the last kernel launched in them, whichever is later."""
    if not steps:
        return None
    steady = steps[1:] if len(steps) >= STEADY_AFTER else steps
    t0, t1 = steady[0][0], steady[-1][1]
    flows = c.flows
    if len(flows):
        ours = _table(len(c.lanes), lanes)[np.clip(flows[:, 0].astype(np.int64), 0, len(c.lanes))]
        ours &= (flows[:, 1] >= t0) & (flows[:, 1] <= t1)
        if ours.any():
            last_start = float(flows[ours, 3].max())
            kernel_cats = [i for i, name in enumerate(c.cats) if name in KERNEL_CATS]
            kernels = _table(len(c.cats), kernel_cats)[c.cat] & (c.start >= t0) & (c.start <= last_start)
            kernels &= _table(len(c.lanes), lanes)[c.lane]
            if kernels.any():
                t1 = max(t1, float((c.start[kernels] + c.dur[kernels]).max()))
    return t0, t1


def lane_roles(c: TraceColumns, kinds: list[str]) -> dict[int, str]:
    """Each thread lane's role where one can be told (see the module), by lane id; threads of
    several roles alike are numbered ("autograd thread 2")."""
    autograd = _autograd_lanes(c)
    launches_backward = np.zeros(len(c.lanes), dtype=bool)
    if len(c.args) == len(c.start):
        kernel_arg = [
            i
            for i, rows in enumerate(c.arg_sets)
            if any(key == "kernel" and BACKWARD_KERNEL.search(value) for key, value in rows)
        ]
        if kernel_arg:
            launches_backward = _per_lane(c, _table(len(c.arg_sets), kernel_arg)[c.args]) > 0
    runs = []  # per role told by what runs on a thread: which lanes run it (names tested once each)
    for pattern, named in RUNS_ROLES:
        hits = [i for i, n in enumerate(c.names) if pattern.search(n)]
        if hits:
            runs.append((_per_lane(c, _table(len(c.names), hits)[c.name]) > 0, named))
    roles: dict[int, str] = {}
    pids = {pid for pid, _tid, _label in c.lanes}
    for lane, (pid, tid, label) in enumerate(c.lanes):
        if kinds[lane] != "thread":
            continue
        role = next(
            (
                pattern.sub(named, label) if "\\1" in named else named
                for pattern, named in NAMED_ROLES
                if pattern.search(label)
            ),
            None,
        )
        if role is None and label and not _BARE.match(label) and not label.startswith("thread "):
            continue  # the trace named it, as nothing known: its name stays
        if role is None and tid == pid and len(pids) == 1:
            role = MAIN
        if role is None and (autograd[lane] or launches_backward[lane]):
            role = AUTOGRAD  # it runs backward nodes, or launches backward kernels
        if role is None:
            role = next((named for hit, named in runs if hit[lane]), None)
        if role is not None:
            roles[lane] = role
    counted: dict[tuple[int, str], list[int]] = {}
    for lane, role in roles.items():
        counted.setdefault((c.lanes[lane][0], role), []).append(lane)
    for (_pid, role), lanes in counted.items():
        if len(lanes) > 1 and role != MAIN:
            for k, lane in enumerate(sorted(lanes)):
                roles[lane] = f"{role} {k + 1}"
    return roles


def backward_spans(
    c: TraceColumns, lanes: np.ndarray, autograd: list[int], steps: list[tuple[float, float]]
) -> list[tuple[float, float]]:
    """Each backward pass's host span (see the module)."""
    host = _host(c, lanes)
    under = host & _table(len(c.lanes), autograd)[c.lane]
    under |= host & _names(c, BACKWARD_NAME)
    if len(c.stack) == len(c.start):
        backward_stacks = [
            i for i, s in enumerate(c.stacks) if "backward" in s or any(f.endswith(".backward") for f in s)
        ]
        under |= host & _table(len(c.stacks), backward_stacks)[c.stack]
    if not under.any():
        return []
    s = c.start[under]
    e = s + c.dur[under]
    order = np.argsort(s, kind="stable")
    s, e = s[order], np.maximum.accumulate(e[order])
    gaps = s[1:] - e[:-1]
    if steps:
        bounds = np.unique(np.asarray([b for step in steps for b in step]))
        cut = np.searchsorted(bounds, s[1:], side="right") != np.searchsorted(bounds, e[:-1], side="right")
    else:
        positive = gaps[gaps > 0]
        usual = float(np.median(positive)) if len(positive) else 0.0
        cut = gaps > max(PAUSE_MIN_NS, 10 * usual)
    first = np.concatenate(([0], np.flatnonzero(cut) + 1))
    last = np.concatenate((first[1:] - 1, [len(s) - 1]))
    return [(float(s[a]), float(e[b])) for a, b in zip(first.tolist(), last.tolist(), strict=True)]


def trace_marks(
    c: TraceColumns, kinds: list[str], lane_ranks: list[str] | None, zero: float
) -> tuple[dict[str, Any], dict[int, str]]:
    """The ref's ``steps``, ``step_window`` and ``backward`` (ns relative to ``zero``, the trace's
    earliest start) and the threads' roles by lane id. In a job's trace, the first rank's."""
    roles = lane_roles(c, kinds)
    # The rank's lanes (a job's first rank; every lane of a process's trace) and its threads: steps
    # and backward passes are host spans (a pl.scope named step inside a kernel is not a step).
    lanes = [i for i in range(len(c.lanes)) if not lane_ranks or lane_ranks[i] == lane_ranks[0]]
    rank = np.asarray(lanes, dtype=np.int64)
    threads = np.asarray([i for i in lanes if kinds[i] == "thread"], dtype=np.int64)
    main = np.asarray([i for i in lanes if roles.get(i) == MAIN], dtype=np.int64)
    steps, how = find_steps(c, threads, main) if len(c.start) else ([], "")
    window = steady_window(c, steps, rank)
    autograd = [i for i in lanes if roles.get(i, "").startswith("autograd thread")]
    backward = backward_spans(c, threads, autograd, steps) if len(c.start) else []
    out: dict[str, Any] = {}
    if steps:
        out["steps"] = [[_rel(a, zero), _rel(b, zero)] for a, b in steps]
        out["steps_how"] = how + (f" (rank {lane_ranks[0]})" if lane_ranks else "")
    if window is not None:
        out["step_window"] = [_rel(window[0], zero), _rel(window[1], zero)]
        out["steady_from"] = 2 if len(steps) >= STEADY_AFTER else 1  # the first step in it, numbered from 1
    if backward:
        out["backward"] = [[_rel(a, zero), _rel(b, zero)] for a, b in backward]
    return out, roles
