"""The sanitizer on patterns from real kernels (tests/check_corpus/patterns.py): each clean one has
no error and computes what torch computes; each planted bug is the right kind, on the right tensor,
at the right line and index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import deuteron
from deuteron.check.locks import LockWaitsForever
from deuteron.model.finding import Finding
from tests.check_corpus import patterns
from tests.helpers.cli import run_cli

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def checked(fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    with deuteron.check(raise_on=None) as check:
        result = fn(*args, **kwargs)
    return result, check.report


def only(findings: list[Finding], kind: str) -> Finding:
    hits = [f for f in findings if f.kind == kind]
    assert len(hits) == 1, [(f.kind, f.line, f.message) for f in findings]
    return hits[0]


def assert_clean(report) -> None:  # type: ignore[no-untyped-def]
    assert report.launches >= 1
    assert report.findings == [], [(f.kind, f.line, f.message) for f in report.findings]


@pytest.mark.parametrize(
    "case",
    [
        patterns.concat,
        patterns.pointer_array,
        patterns.padded_view,
        patterns.grouped_sum,
        patterns.autotuned,
        patterns.libdevice_norm,
    ],
    ids=lambda f: f.__name__,
)
def test_clean_patterns_have_no_findings_and_real_outputs(case) -> None:  # type: ignore[no-untyped-def]
    for _ in range(3):  # allocation addresses differ from run to run: the verdict must not
        (got, want), report = checked(case)
        assert_clean(report)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_concat_with_a_wrong_offset_is_out_of_bounds_on_its_own_tensor() -> None:
    _, report = checked(patterns.concat, shift=10)
    f = only(report.findings, "out-of-bounds")
    assert f.tensor == "b_ptr" and f.line == patterns.bug_line(patterns.concat_kernel, "out-of-bounds")
    assert f.index == [500]  # the first lane past b's 500 elements
    assert f.details["access"] == "load" and f.programs == 1


def test_a_pointer_array_resolves_its_targets_and_a_stray_past_one_is_out_of_bounds() -> None:
    _, report = checked(patterns.pointer_array, extra=5)
    assert {f.kind for f in report.findings} == {"out-of-bounds"}
    by_size = {f.index[0]: f for f in report.findings if f.index is not None}
    assert sorted(by_size) == [37, 64, 100]  # one per target, each at its first element past the end
    for size, f in by_size.items():
        assert f.line == patterns.bug_line(patterns.scale_each_kernel, "out-of-bounds")
        assert f.tensor == f"<float32 ({size},) tensor from a pointer in memory>" and f.programs == 1
        assert f.details["element_offsets"][0] == size


def test_a_pointer_into_no_tensor_is_a_finding_not_a_crash() -> None:
    (got, want), report = checked(patterns.pointer_array, bad=True)
    assert {f.kind for f in report.findings} == {"out-of-bounds"} and len(report.findings) == 2  # load, store
    f = next(
        f for f in report.findings if f.line == patterns.bug_line(patterns.scale_each_kernel, "out-of-bounds")
    )
    assert f.tensor == "<unknown pointer>" and "points into no live tensor" in f.message
    assert f.programs == 1 and f.details["addresses"][0] == 4096
    torch.testing.assert_close(got[:100], want[:100])  # the others were still computed


def test_lanes_in_the_padding_of_a_view_are_outside_view_with_their_index() -> None:
    (got, want), report = checked(patterns.padded_view, mask_cols=64)
    assert not [f for f in report.findings if f.severity == "error"]
    views = [f for f in report.findings if f.kind == "outside-view"]
    assert {f.tensor for f in views} == {"x_ptr", "y_ptr"}
    store = next(f for f in views if f.tensor == "y_ptr")
    assert store.line == patterns.bug_line(patterns.copy_rows_kernel, "outside-view")
    assert store.index == [0, 60] and store.details["access"] == "store"
    assert store.programs == 100  # every row's 4 padding lanes
    torch.testing.assert_close(got, want)  # the view's own elements are right


def test_a_stray_into_a_neighbour_is_out_of_bounds_on_its_own_tensor_not_a_race() -> None:
    skew, report = checked(patterns.stray_into_neighbour)
    f = only(report.findings, "out-of-bounds")
    assert f.tensor == "x_ptr" and f.details["lands_in"] == "y_ptr"
    assert f.line == patterns.bug_line(patterns.stray_kernel, "out-of-bounds")
    assert f.index == [skew] and f.programs == 8
    assert not [g for g in report.findings if g.kind == "race"]


def test_a_lock_never_released_stops_the_launch_with_a_lock_error() -> None:
    with deuteron.check(raise_on=None) as check, pytest.raises(LockWaitsForever, match="never released"):
        patterns.grouped_sum(release=False)
    f = only(check.report.findings, "lock")
    assert f.severity == "error" and f.tensor == "Lock" and f.index is None
    assert f.line == patterns.bug_line(patterns.grouped_sum_kernel, "lock")
    assert f.program == (4, 0, 0) and "program (0, 0, 0)" in f.message and f.details["address"] == "Lock[0]"


def test_an_access_outside_the_lock_is_still_a_race() -> None:
    _, report = checked(patterns.grouped_sum, guard=False)
    f = only(report.findings, "race")
    assert f.tensor == "Partial" and f.line == patterns.bug_line(patterns.grouped_sum_kernel, "race")
    assert f.index == [0, 0]  # Partial is (groups, n)


def test_a_config_that_fails_its_static_assert_is_skipped_as_on_a_gpu() -> None:
    (got, want), report = checked(patterns.rejected_config)
    assert_clean(report)
    assert report.launches == 3 and report.failed_launches == 0  # two benchmarks and the run, not 256
    torch.testing.assert_close(got, want)
    assert patterns.small_block_kernel.best_config.kwargs["BLOCK"] == 64


def test_warmup_gives_a_kernel_that_launches_in_the_interpreter(capsys) -> None:  # type: ignore[no-untyped-def]
    (got, want), report = checked(patterns.warmed_up_grid)
    assert_clean(report)
    torch.testing.assert_close(got, want)
    assert report.launches == 1 and report.programs > 300  # 132 SMs x occupancy, persistent
    assert "persistent_rows_kernel.warmup() compiles nothing in the interpreter" in capsys.readouterr().err


def test_autotune_runs_and_checks_every_config() -> None:
    (got, want), report = checked(patterns.autotuned, 777)  # a size the autotuner has not tuned yet
    assert report.launches == 4 and report.kernels == {"tuned_axpy_kernel": 4}  # 3 benchmarks + the run
    torch.testing.assert_close(got, want)


SCRIPT = """
import sys
sys.path.insert(0, {repo!r})
from tests.check_corpus import patterns
{body}
"""


@pytest.mark.skipif(torch.cuda.is_available(), reason="the emulated driver answers only where no GPU does")
def test_run_files_autotune_benchmarks_under_autotune_and_answers_driver_queries(tmp_path: Path) -> None:
    from tests.helpers.paths import REPO

    body = (
        "q = patterns.driver_queries()\n"
        "print(q['device'], q['target'].backend, q['target'].arch, q['sms'], q['smem'], q['warp'])\n"
        "assert q['bench'] > 0\n"
        "got, want = patterns.autotuned()\n"
        "assert (got - want).abs().max() < 1e-5\n"
    )
    (tmp_path / "s.py").write_text(SCRIPT.format(repo=str(REPO), body=body))
    proc = run_cli("run", "--device", "a100", "s.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["cpu", "cuda", "80", "108", "166912", "32"]
    assert proc.stderr.count("Triton's driver answers as an A100 (cuda:80, 108 SMs)") == 1
    tree = json.loads((tmp_path / "deuteron.hatchet").read_text())

    def find(node, name):  # type: ignore[no-untyped-def]
        if node["frame"]["name"] == name:
            return node
        for child in node.get("children", []):
            hit = find(child, name)
            if hit is not None:
                return hit
        return None

    root = tree[0]
    tune = find(root, "<autotune>")
    assert tune is not None
    assert find(tune, "tuned_axpy_kernel")["metrics"]["count"] == 3
    outside = [c for c in root["children"] if c["frame"]["name"] == "tuned_axpy_kernel"]
    assert outside and outside[0]["metrics"]["count"] == 1


def test_a_device_name_nobody_knows_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "s.py").write_text("print('never')\n")
    for command in ("run", "check"):
        proc = run_cli(command, "--device", "h900", "s.py", cwd=tmp_path)
        assert proc.returncode == 2 and "never" not in proc.stdout
        assert proc.stderr.strip().count("\n") == 0 and "unknown device 'h900'; choose one of" in proc.stderr


def test_check_under_pytest_names_the_test(tmp_path: Path) -> None:
    from tests.helpers.paths import REPO

    (tmp_path / "test_k.py").write_text(
        SCRIPT.format(repo=str(REPO), body="def test_concat():\n    patterns.concat(shift=10)\n")
    )
    proc = run_cli(
        "check", "--json", "r.json", "pytest", "-q", "-p", "no:cacheprovider", "test_k.py", cwd=tmp_path
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (
        "in test test_k.py::test_concat" in proc.stderr
        and "e.g. program (6, 0, 0), b_ptr[500]" in proc.stderr
    )
    finding = json.loads((tmp_path / "r.json").read_text())["findings"][0]
    assert finding["tests"] == ["test_k.py::test_concat"] and finding["index"] == [500]
