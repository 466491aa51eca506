"""Every exercise's checker, proved both ways: the reference solution passes it, the starter
fails it; the two bug-finding exercises fail on the finding alone (their outputs are right)."""

from __future__ import annotations

import ast
import time
from pathlib import Path

import pytest

from deuteron.learn import LearnError, all_exercises, find
from deuteron.learn.grade import grade
from deuteron.learn.text import verdict

EXERCISES = all_exercises()
IDS = [ex.name for ex in EXERCISES]


# exercise 1's kernel, endless: what the timer must stop
SPIN = (
    "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
    "def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
    "    i = 0\n    while i >= 0:\n        i += 1\n"
)


def test_the_catalog_is_twelve_exercises_in_order_with_their_files() -> None:
    assert [ex.number for ex in EXERCISES] == list(range(1, 13))
    assert len({ex.slug for ex in EXERCISES}) == 12
    for ex in EXERCISES:
        for name in ("statement.md", "starter.py.txt", "solution.py.txt"):
            assert (ex.folder / name).is_file(), (ex.name, name)
        assert ex.statement().startswith("# "), ex.name
        assert len(ex.hints) >= 3, ex.name


@pytest.mark.parametrize("ex", EXERCISES, ids=IDS)
def test_starter_and_solution_have_the_same_kernel_signature(ex) -> None:
    def signature(source: str) -> str:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef) and node.name == ex.kernel:
                return ast.unparse(node.args)
        raise AssertionError(f"{ex.name}: no {ex.kernel}")

    assert signature(ex.starter()) == signature(ex.solution_path.read_text())
    assert ex.signature().startswith(f"{ex.kernel}(")


@pytest.mark.parametrize("ex", EXERCISES, ids=IDS)
def test_every_exercise_checks_a_shape_that_is_not_a_multiple_of_its_blocks(ex) -> None:
    # Every block of every exercise is 16, 32 or 64 (or the next power of two of a size).
    assert any(size % 16 for c in ex.cases for _, size in c.sizes), ex.name
    assert len(ex.cases) >= 3


@pytest.mark.parametrize("ex", EXERCISES, ids=IDS)
def test_the_reference_solution_passes_its_checker(ex) -> None:
    result = grade(ex, None)
    assert [c.case.label for c in result.cases if not c.passed] == [], verdict(result)
    assert all(not c.findings or all(f.severity == "info" for f in c.findings) for c in result.cases)
    assert result.passed
    assert result.seconds < 20  # lenient: the benchmark measures the real time


@pytest.mark.parametrize("ex", EXERCISES, ids=IDS)
def test_the_starter_fails_its_checker(ex, tmp_path: Path) -> None:
    learner = tmp_path / f"{ex.name}.py"
    learner.write_text(ex.starter())
    result = grade(ex, learner)
    assert not result.passed
    failed = [c for c in result.cases if not c.passed]
    assert failed
    text = verdict(result)
    assert "FAIL" in text and f"deuteron learn hint {ex.number}" in text


@pytest.mark.parametrize("ex", [e for e in EXERCISES if e.buggy_starter], ids=lambda e: e.name)
def test_a_buggy_starter_fails_on_its_finding_alone_and_the_hint_names_the_lane(ex, tmp_path: Path) -> None:
    learner = tmp_path / f"{ex.name}.py"
    learner.write_text(ex.starter())
    result = grade(ex, learner)
    assert not result.passed
    # The outputs are right (the interpreter runs programs one by one and masks bad lanes off):
    # only the checker's finding tells.
    assert all(not c.wrong and not c.error for c in result.cases)
    kinds = {f.kind for c in result.cases for f in c.failing}
    assert kinds == {ex.finding}
    first = next(f for c in result.cases for f in c.failing)
    assert first.program is not None and first.index is not None and first.tensor
    text = verdict(result)
    assert f"e.g. program {first.program}" in text
    assert f"{first.tensor}[{', '.join(map(str, first.index))}]" in text
    assert ex.finding_hints[ex.finding] in text
    assert f"{learner.name}:{first.line}" in text


def test_the_bounds_bug_is_the_lane_just_past_x(tmp_path: Path) -> None:
    ex = find(11)
    learner = tmp_path / "blur.py"
    learner.write_text(ex.starter())
    result = grade(ex, learner)
    for c in result.cases:
        (f,) = c.failing
        assert f.tensor == "x_ptr" and f.index == [c.case["n"]], (c.case.label, f.index)


def test_a_wrong_kernel_is_told_by_its_first_wrong_element(tmp_path: Path) -> None:
    ex = find("vector_add")
    learner = tmp_path / "minus.py"
    learner.write_text(ex.solution_path.read_text().replace("x + y", "x - y"))
    result = grade(ex, learner)
    assert not result.passed
    assert all(c.wrong and c.wrong[0].startswith("out[0] is ") for c in result.cases)
    assert f"of {ex.cases[-1]['n']} elements differ" in result.cases[-1].wrong[0]


def test_a_kernel_that_raises_is_one_line_with_its_line(tmp_path: Path) -> None:
    ex = find(1)
    learner = tmp_path / "bad.py"
    learner.write_text(ex.solution_path.read_text().replace("tl.arange(0, BLOCK)", "tl.arange(0, 100)"))
    result = grade(ex, learner)
    line = next(i for i, t in enumerate(learner.read_text().splitlines(), 1) if "arange(0, 100)" in t)
    for c in result.cases:
        assert c.error.startswith(f"bad.py:{line}: ") or c.error.startswith(f"{learner}:{line}: "), c.error
        assert "\n" not in c.error


def test_a_kernel_that_never_ends_is_stopped_and_the_rest_is_not_run(tmp_path: Path) -> None:
    ex = find(1)
    learner = tmp_path / "spin.py"
    learner.write_text(SPIN)
    result = grade(ex, learner, timeout=0.5)
    assert result.cases[0].error.startswith("stopped after 0.5 s")
    assert all(c.error.startswith("not run") for c in result.cases[1:])
    assert result.seconds < 10


def test_a_recording_stopped_by_the_timer_runs_no_shape_after_it(tmp_path: Path) -> None:
    from deuteron.formats import access_record
    from deuteron.learn.grade import deadline, prepare, write_records
    from deuteron.learn.loader import load_kernel

    ex = find(1)
    learner = tmp_path / "spin.py"
    learner.write_text(SPIN)
    prepare()
    with deadline(60, "loading the file"):
        kernel = load_kernel(str(learner), ex.kernel)
    started = time.perf_counter()
    written = write_records(ex, kernel, str(learner), tmp_path / "rec", timeout=0.5)
    assert time.perf_counter() - started < 0.5 * len(ex.cases)  # one stop, not one per shape
    yours, _, _ = access_record.read(str(tmp_path / "rec" / "01_vector_add.yours.npz"))
    assert len(yours["launches"]) <= 1
    reference, _, _ = access_record.read(written[-1])
    assert len(reference["launches"]) == len(ex.cases)


def test_the_timeout_must_be_a_finite_time_of_at_most_a_day(tmp_path: Path) -> None:
    for bad in (0.0, -1.0, float("nan"), float("inf"), 1e300):
        with pytest.raises(LearnError, match="--timeout must be more than 0 seconds and at most 86400"):
            grade(find(1), None, timeout=bad)


def test_a_lock_never_released_is_stopped_by_the_checker_and_told(tmp_path: Path) -> None:
    ex = find("histogram")
    learner = tmp_path / "lock.py"
    learner.write_text(
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
        "def histogram_kernel(x_ptr, counts_ptr, n, n_bins, BLOCK: tl.constexpr):\n"
        "    while tl.atomic_cas(counts_ptr, 0, 1) != 0:\n        pass\n"
    )
    result = grade(ex, learner, timeout=60)
    last = result.cases[-1]  # the only shape with more than one program
    assert last.error.startswith("stopped: a program would wait forever on a lock")
    (lock,) = last.failing
    assert lock.kind == "lock" and lock.line == 7 and lock.program == (1, 0, 0)
    assert "tl.atomic_xchg(lock, 0)" in verdict(result)
    assert result.seconds < 30  # stopped by the finding, not by the timer


@pytest.mark.parametrize("ref", ["3", "03", "outer_add", "03_outer_add", 3])
def test_an_exercise_is_found_by_number_or_name(ref) -> None:
    assert find(ref).name == "03_outer_add"


@pytest.mark.parametrize("ref", ["0", "13", "softmaxx", ""])
def test_an_unknown_exercise_is_one_line(ref) -> None:
    with pytest.raises(LearnError, match="no exercise") as info:
        find(ref)
    assert "\n" not in str(info.value)
