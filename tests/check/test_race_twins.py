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


def test_a_wait_on_a_later_program_is_let_pass_and_its_order_undecided() -> None:
    """The producer is the last program: each consumer's spin is let pass (the launch runs to its
    end), and since a later program sets the flag, the lock finding says the order is undecided and
    no race is reported for what the consumers read first here."""
    found = findings_of(race_twins.late_producer)
    line = bug_line(race_twins.late_producer_kernel, "lock")
    assert verdict(found) == [("lock", line)]
    (lock,) = found
    assert lock.programs == 3 and lock.details["verdict"] == "undecided"
    assert "program (3, 0, 0), which runs later here, changes it at line" in lock.message
    assert "Undecided: whether what this program reads after the wait is ordered" in lock.message


def test_a_spin_no_candidate_ends_still_stops_the_launch() -> None:
    """A wait for one exact value that no candidate the check tries ends stops the launch, as the
    plain interpreter would hang."""
    with deuteron.check(raise_on=None) as check:
        with pytest.raises(LockWaitsForever):
            race_twins.exact_value()
    found = list(check.report.findings)
    assert verdict(found) == [("lock", bug_line(race_twins.exact_value_kernel, "lock"))]
    assert "Undecided: whether one of the 1 program(s) not run sets it" in found[0].message


def test_a_ticket_counter_orders_nothing() -> None:
    found = findings_of(race_twins.ticket)
    assert verdict(found) == [("race", bug_line(race_twins.ticket_kernel, "race"))]
    assert "is a ticket (it changes the value it reads)" in found[0].message


@pytest.mark.parametrize("name", list(race_twins.MANY))
def test_the_race_free_twin_of_a_many_finding_pair_has_no_finding(name: str) -> None:
    _, safe, _, _ = race_twins.MANY[name]
    found = findings_of(safe)
    assert found == [], [(f.kind, f.line, f.message) for f in found]


@pytest.mark.parametrize("name", list(race_twins.MANY))
def test_the_racy_twin_of_a_many_finding_pair_gives_each_finding_at_its_line(name: str) -> None:
    kernel, _, racy, expected = race_twins.MANY[name]
    found = findings_of(racy)
    want = sorted((kind, bug_line(kernel, marker)) for kind, marker in expected)
    assert sorted(verdict(found)) == want, [(f.kind, f.line, f.message) for f in found]
    assert all(f.severity == "error" for f in found)


def test_a_spin_on_a_flag_no_program_sets_is_a_hang_and_the_race_it_guards() -> None:
    kernel, _, racy, _ = race_twins.MANY["spin on a flag no program sets"]
    found = {f.kind: f for f in findings_of(racy)}
    spin = bug_line(kernel, "lock")
    lock, race = found["lock"], found["race"]
    assert lock.programs == 3 and lock.details["verdict"] == "hang"
    assert (
        "which no program of the launch ever changes (all 4 programs ran): on a GPU this waits forever"
        in (lock.message)
    )
    read = _lines(kernel)["tl.store(out + (pid - 1) * BLOCK + offs, tl.load(data + offs) + 1.0)"]
    assert (
        f"the read at line {read} is not ordered after the write at line {bug_line(kernel, 'race')}: "
        f"program (1, 0, 0) waits at line {spin} for flag[0] to change from 0, and no program sets it"
    ) in race.message


def test_a_semaphore_short_of_its_count_is_a_hang_without_a_race() -> None:
    """The consumer waits for one count more than there are producers: a hang, but its acquire read
    every producer's release (a count carries the release sequences it continues): no race."""
    _, _, racy, _ = race_twins.MANY["semaphore waiting for a count no program reaches"]
    (lock,) = findings_of(racy)
    assert lock.kind == "lock" and "count[0], which holds 3" in lock.message


def test_a_last_block_whose_ticket_goes_to_a_helper_is_an_undecided_race() -> None:
    """The ticket completes the count but is handed to another function, whose branch on it the
    check does not follow: a race of severity warning that says it is undecided, not an error."""
    found = findings_of(race_twins.last_block_helper)
    line = bug_line(race_twins.last_block_helper_kernel, "undecided")
    assert verdict(found) == [("race", line)]
    (race,) = found
    assert race.severity == "warning" and race.details["verdict"] == "undecided"
    assert race.message.startswith("undecided: ")
    assert "completes the count (every other program changed it first)" in race.message
    assert "cannot be told" in race.message


def test_an_undecided_race_does_not_fail_a_check_raising_on_errors() -> None:
    with deuteron.check() as check:  # raise_on="error": a warning does not raise
        race_twins.last_block_helper()
    assert [f.severity for f in check.report.findings] == ["warning"]


def test_the_last_block_is_ordered_only_by_a_ticket_that_completes_the_count() -> None:
    """The last-block twins' messages: a relaxed counter is no release; a reader chosen by its id
    is not ordered by its ticket."""
    relaxed = findings_of(race_twins.TWINS["last block"][2])[0].message
    assert "is relaxed; use sem='acq_rel'" in relaxed
    by_id = findings_of(race_twins.last_by_pid)[0].message
    assert "is a ticket (it changes the value it reads)" in by_id


def test_buffer_reuse_after_a_release_orders_the_overwrite_after_the_read() -> None:
    kernel, _, racy = race_twins.TWINS["buffer handed over by a flag"]
    message = findings_of(racy)[0].message
    lines = _lines(kernel)
    read = lines["tl.store(out + offs, tl.load(scratch + offs))"]
    assert (
        f"the write at line {bug_line(kernel, 'race')} is not ordered after the read at line {read}"
        in message
    )
    assert "(program (0, 0, 0)) is relaxed; use sem='release'" in message


def test_one_poll_whose_value_is_thrown_away_is_not_a_wait() -> None:
    kernel, _, racy = race_twins.TWINS["one poll, not a wait"]
    message = findings_of(racy)[0].message
    assert "is one poll whose value nothing depends on" in message


def test_how_an_atomic_value_is_used_is_read_from_the_source() -> None:
    from deuteron.check.branches import Use, atomic_use

    file = race_twins.__file__
    lines = _lines(race_twins.last_block_kernel)
    assert atomic_use(file, lines["ticket = tl.atomic_add(count, 1, sem=SEM)"]) == Use.DECIDES
    poll = _lines(race_twins.one_poll_kernel)
    assert atomic_use(file, poll['tl.atomic_add(flag, 0, sem="acquire")']) == Use.DISCARDED
    assert atomic_use(file, poll['while tl.atomic_add(flag, 0, sem="acquire") == 0:']) == Use.DECIDES
    helper = _lines(race_twins.last_block_helper_kernel)
    assert atomic_use(file, helper["ticket = tl.atomic_add(count, 1)"]) == Use.UNKNOWN
    assert atomic_use("/no/such/file.py", 3) == Use.UNKNOWN


def test_precision_and_recall_over_the_corpus() -> None:
    """Every expected finding (kind and line) counts once; a finding not expected, in a racy or a
    race-free twin, is a false positive. The numbers docs/check.md quotes."""
    true_pos = false_pos = false_neg = 0
    cases = [(k, safe, racy, [("race", "race")]) for k, safe, racy in race_twins.TWINS.values()]
    cases += list(race_twins.MANY.values())
    expected_total = 0
    for kernel, safe, racy, expected in cases:
        want = {(kind, bug_line(kernel, marker)) for kind, marker in expected}
        expected_total += len(want)
        hits = verdict(findings_of(racy))
        true_pos += len(want & set(hits))
        false_neg += len(want - set(hits))
        false_pos += len([h for h in hits if h not in want]) + len(findings_of(safe))
    assert (true_pos, false_pos, false_neg) == (expected_total, 0, 0)
    assert (len(cases), expected_total) == (18, 20)


def _lines(kernel: object) -> dict[str, int]:
    fn = getattr(kernel, "fn", kernel)
    source, first = inspect.getsourcelines(fn)  # type: ignore[arg-type]
    return {text.strip().split("  #")[0]: first + i for i, text in enumerate(source)}
