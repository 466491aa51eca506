"""From a decoded profile buffer to what a session keeps: scope rows for the tree, spans for the trace.

Time comes from cycles. Each SM counts its own clock cycles (``clock64``); a scope's duration in
cycles is exact on its SM, and is turned into nanoseconds with the SM clock rate the driver reports
(``ns = cycles / GHz``). That is exact while the GPU runs at that clock (an H100/H200 under load
runs at its boost clock unless it throttles for power or heat; a throttled GPU makes the ns too
small by the same factor). Where the spans are placed in time uses the global timer, which all SMs
share: each CTA's first span starts at the CTA's own start reading (``init_ns``), and later spans
follow by their cycles. The global timer ticks every 32 ns on Hopper, so CTAs on different SMs line
up to within about 32 ns, and a warp's spans within one CTA to the cycle.
"""

from __future__ import annotations

import numpy as np

from deuteron.collect.backends.instrumentation.decode import Decoded
from deuteron.model.intra import CYCLES, INSTANCES, NORMALIZED_CYCLES, IntraSpans, ScopeRow
from deuteron.model.metrics import TIME


def scope_paths(names: dict[int, str], parents: dict[int, int]) -> dict[int, tuple[str, ...]]:
    """Each scope's path of names from the kernel's top, by following parents (cycles broken)."""
    paths: dict[int, tuple[str, ...]] = {}
    for scope_id in names:
        path: list[str] = []
        seen: set[int] = set()
        at = scope_id
        while at in names and at not in seen:
            seen.add(at)
            path.append(names[at])
            at = parents.get(at, -1)
        paths[scope_id] = tuple(reversed(path))
    return paths


def rows(
    decoded: Decoded,
    names: dict[int, str],
    parents: dict[int, int],
    num_ctas: int,
    total_units: int,
    clock_khz: int,
    launches: int = 1,
) -> list[ScopeRow]:
    """One row per scope that completed at least once: Proton's ``cycles`` (summed over every CTA
    and unit) and ``normalized_cycles`` (over CTAs x all units, as Proton divides), and Deuteron's
    ``time (ns)``: the scope's *own* time (its nested scopes' taken out, so a view's sums are right)
    averaged over the CTAs and sampled units that ran the kernel, with the spread over those units
    (``cycles min/median/max (pty)``, ``imbalance (pty)``: max over median). ``decoded`` may hold
    ``launches`` launches of ``num_ctas`` CTAs each: the per-launch values are then summed, as the
    tree sums a kernel's launches."""
    if not len(decoded.start_cycle):
        return []
    paths = scope_paths(names, parents)
    dur = decoded.end_cycle - decoded.start_cycle
    ghz = clock_khz / 1e6 if clock_khz > 0 else 1.0
    # one pass of bincounts over (scope, unit of a CTA) instead of a pass per scope
    unit_key = decoded.cta * (int(decoded.unit.max()) + 1) + decoded.unit
    unit_ids, unit_of = np.unique(unit_key, return_inverse=True)
    n_units = len(unit_ids)
    scope_ids, scope_of = np.unique(decoded.scope, return_inverse=True)
    totals = np.bincount(scope_of, weights=dur, minlength=len(scope_ids))
    counts = np.bincount(scope_of, minlength=len(scope_ids))
    cell = scope_of * n_units + unit_of
    per_unit = np.bincount(cell, weights=dur, minlength=len(scope_ids) * n_units).reshape(
        len(scope_ids), n_units
    )
    ran = (np.bincount(cell, minlength=len(scope_ids) * n_units) > 0).reshape(len(scope_ids), n_units)
    total_of = {
        int(scope_id): float(t) for scope_id, t in zip(scope_ids.tolist(), totals.tolist(), strict=True)
    }
    children: dict[int, list[int]] = {}
    for scope_id, parent in parents.items():
        children.setdefault(parent, []).append(scope_id)
    out: list[ScopeRow] = []
    for i, scope_id in enumerate(scope_ids.tolist()):
        total = int(totals[i])
        nested = sum(total_of.get(child, 0.0) for child in children.get(scope_id, []))
        mine = per_unit[i][ran[i]]
        median = float(np.median(mine))
        metrics: dict[str, object] = {
            CYCLES: total,
            NORMALIZED_CYCLES: total / max(num_ctas * total_units, 1),
            TIME: max(total - nested, 0) * launches / n_units / ghz,
            INSTANCES: int(counts[i]),
            "cycles min (pty)": int(mine.min()),
            "cycles median (pty)": median,
            "cycles max (pty)": int(mine.max()),
            "imbalance (pty)": round(float(mine.max()) / median, 3) if median > 0 else 1.0,
        }
        out.append(ScopeRow(paths.get(scope_id, (f"scope_{scope_id}",)), metrics))
    return out


def spans(
    decoded: Decoded,
    kernel: str,
    names: dict[int, str],
    clock_khz: int,
    offset_ns: int,
    unit_label: str = "warp",
) -> IntraSpans:
    """The spans of every CTA's units on the session's clock (global timer minus ``offset_ns``)."""
    ghz = clock_khz / 1e6 if clock_khz > 0 else 1.0
    ids = sorted(names) or [0]
    index = {scope_id: i for i, scope_id in enumerate(ids)}
    labels = [names.get(scope_id, f"scope_{scope_id}") for scope_id in ids]
    cta = decoded.cta
    first = np.full(len(decoded.cta_id), np.iinfo(np.int64).max, np.int64)
    np.minimum.at(first, cta, decoded.start_cycle)
    base = decoded.init_ns[cta] - offset_ns
    start = base + ((decoded.start_cycle - first[cta]) / ghz).astype(np.int64)
    end = base + ((decoded.end_cycle - first[cta]) / ghz).astype(np.int64)
    for scope_id in set(np.unique(decoded.scope).tolist()) - set(index):  # an id the kernel's IR did not name
        labels.append(f"scope_{scope_id}")
        index[scope_id] = len(labels) - 1
    lookup = np.zeros(max(index) + 1, np.int64)
    lookup[list(index)] = list(index.values())
    scope = lookup[decoded.scope]
    init = decoded.init_ns[cta]
    row_args = {
        "Init Time (ns)": init - int(decoded.init_ns.min()) if len(init) else init,
        "Post Final Time (ns)": decoded.post_final_ns[cta] - init,
        "Finalization Time (ns)": decoded.post_final_ns[cta] - decoded.pre_final_ns[cta],
    }
    return IntraSpans(
        kernel,
        labels,
        decoded.cta_id[cta],
        decoded.sm[cta],
        decoded.unit.copy(),
        scope,
        start,
        end,
        unit_label=unit_label,
        args={"Frequency (MHz)": clock_khz / 1e3},
        row_args=row_args,
    )


def clock_floor_mhz(decoded: Decoded) -> float | None:
    """A lower bound of the SM clock the CTAs actually ran at: each CTA's span of cycles (first scope
    start to last end) over its span on the global timer (its start to its finalization), which
    holds the scopes and more. The median over CTAs that lived 2 us or longer (the timer ticks every
    32 ns); None when none did. Above the driver's clock rate it would mean ns come out too long."""
    if not len(decoded.start_cycle):
        return None
    n = len(decoded.cta_id)
    first = np.full(n, np.iinfo(np.int64).max, np.int64)
    last = np.zeros(n, np.int64)
    np.minimum.at(first, decoded.cta, decoded.start_cycle)
    np.maximum.at(last, decoded.cta, decoded.end_cycle)
    lived = decoded.pre_final_ns - decoded.init_ns
    ok = (last > first) & (lived >= 2000)
    if not ok.any():
        return None
    return float(np.median((last[ok] - first[ok]) / lived[ok])) * 1e3
