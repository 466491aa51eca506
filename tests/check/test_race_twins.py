"""Races judged by Triton's memory model (tests/check_corpus/race_twins.py): each racy twin gives
exactly one finding, a race at its ``# BUG: race`` line, and says which order is missing; each
race-free twin gives none. Precision and recall over the corpus are the numbers docs/check.md quotes."""

from __future__ import annotations

import inspect
from collections.abc import Callable

import numpy as np
import pytest
import torch
import triton

import deuteron
from deuteron.check.locks import LockWaitsForever
from deuteron.model.finding import Finding
from tests.check_corpus import race_twins
from tests.check_corpus.patterns import bug_line

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def findings_of(run: Callable[[], None]) -> list[Finding]:
    with deuteron.check(raise_on=None) as check:
        run()
    assert check.report.launches == 1
    return list(check.report.findings)


def verdict(findings: list[Finding]) -> list[tuple[str, int]]:
    return [(f.kind, f.line) for f in findings]


@pytest.mark.parametrize("name", list(race_twins.TWINS))
def test_the_race_free_twin_has_no_finding(name: str) -> None:
    _, safe, _ = race_twins.TWINS[name]
    found = findings_of(safe)
    assert found == [], [(f.kind, f.line, f.message) for f in found]


@pytest.mark.parametrize("name", list(race_twins.TWINS))
def test_the_racy_twin_is_one_race_at_its_bug_line(name: str) -> None:
    kernel, _, racy = race_twins.TWINS[name]
    found = findings_of(racy)
    assert verdict(found) == [("race", bug_line(kernel, "race"))], [
        (f.kind, f.line, f.message) for f in found
    ]


@pytest.mark.parametrize(
    ("name", "why"),
    [
        (
            "flag acquire/release",
            "the flag's atomic_xchg at line {xchg} (program (0, 0, 0)) is relaxed; use sem='release'",
        ),
        ("relaxed poll", "the flag's load at line {load} is relaxed"),
        ("release without acquire", "the flag's atomic_add at line {relaxed} is relaxed; use sem='acquire'"),
        ("role skipping the wait", "no acquire in the later program reads a value the other released"),
    ],
)
def test_a_flag_race_says_which_order_is_missing(name: str, why: str) -> None:
    kernel, _, racy = race_twins.TWINS[name]
    message = findings_of(racy)[0].message
    lines = _lines(kernel)
    store = bug_line(kernel, "race")
    read = lines["x = tl.load(data + offs)"]
    assert f"the read at line {read} is not ordered after the write at line {store}: " in message
    assert (
        why.format(
            xchg=lines["tl.atomic_xchg(flag, 1, sem=PUBLISH)"],
            load=lines["while tl.load(flag, volatile=True) == 0:"],
            relaxed=lines['while tl.atomic_add(flag, 0, sem="relaxed") == 0:'],
        )
        in message
    )


def test_cta_scope_atomics_say_the_scope_orders_no_other_program() -> None:
    kernel, _, racy = race_twins.TWINS["cta-scope atomics"]
    message = findings_of(racy)[0].message
    assert "atomic_add with scope='cta'" in message and "use scope='gpu'" in message


def test_a_scalar_mask_masks_every_lane_or_is_refused_as_the_interpreter_refuses_it() -> None:
    """``mask=pid == 0``: programs 1-3 store nothing, so no race and no unwritten element. Triton
    3.9's interpreter refuses the scalar mask; the check then adds no finding of its own."""
    with deuteron.check(raise_on=None) as check:
        try:
            out = race_twins.scalar_mask()
        except triton.runtime.errors.InterpreterError as error:
            assert "mask" in str(error)  # 3.9: "mask has unsupported dtype"
        else:
            assert torch.equal(out, torch.arange(race_twins.BLOCK, dtype=torch.float32))
    assert check.report.findings == []


def test_a_mask_of_any_shape_and_integer_type_selects_lanes_as_triton_broadcasts_it() -> None:
    """An integer mask (what a scalar comparison can be in the interpreter) must not index lanes by
    number: ``0`` masks every lane off, ``1`` none; a row mask broadcasts over the columns."""
    from deuteron.check.guard import _lanes

    assert not _lanes(np.array(0, np.int32), (4, 8)).any()
    assert _lanes(np.array(1, np.int32), (4, 8)).all()
    row = np.array([[True], [False], [True], [False]])
    assert _lanes(row, (4, 8)).sum() == 16 and _lanes(row.astype(np.int8), (4, 8)).sum() == 16


def test_a_wait_on_a_later_program_is_a_hang_and_its_order_undecided() -> None:
    with deuteron.check(raise_on=None) as check:
        with pytest.raises(LockWaitsForever):
            race_twins.late_producer()
    found = list(check.report.findings)
    line = bug_line(race_twins.late_producer_kernel, "lock")
    assert verdict(found) == [("lock", line)]
    assert "Undecided: whether one of the 3 program(s) not run sets it" in found[0].message


def test_a_ticket_counter_orders_nothing() -> None:
    found = findings_of(race_twins.ticket)
    assert verdict(found) == [("race", bug_line(race_twins.ticket_kernel, "race"))]


def test_precision_and_recall_over_the_corpus() -> None:
    true_pos = false_pos = false_neg = 0
    for kernel, safe, racy in race_twins.TWINS.values():
        line = bug_line(kernel, "race")
        hits = verdict(findings_of(racy))
        true_pos += hits == [("race", line)]
        false_neg += ("race", line) not in hits
        false_pos += len([h for h in hits if h != ("race", line)]) + len(findings_of(safe))
    assert (true_pos, false_pos, false_neg) == (len(race_twins.TWINS), 0, 0)


def _lines(kernel: object) -> dict[str, int]:
    fn = getattr(kernel, "fn", kernel)
    source, first = inspect.getsourcelines(fn)  # type: ignore[arg-type]
    return {text.strip().split("  #")[0]: first + i for i, text in enumerate(source)}
