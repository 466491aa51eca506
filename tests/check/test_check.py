"""``deuteron check``: the corpus (correct kernels stay silent, planted bugs are found at their
line), the Python API, the command line in fresh processes, and the access-record file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
import triton

import deuteron
from deuteron.check import FindingLimitReached
from deuteron.check.findings import Findings
from deuteron.check.memory import MemoryChecks
from deuteron.formats.access_record import read as read_record
from deuteron.model import access as adapter
from deuteron.triton import SUPPORTED as SUPPORTED_TRITON
from tests.check_corpus import buggy, correct, raises
from tests.helpers.cli import run_cli
from tests.helpers.paths import REPO

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's "divide by zero" in nan kernels


@pytest.mark.parametrize("case", sorted(correct.CASES))
def test_correct_kernels_have_no_findings(case: str):
    with deuteron.check(raise_on=None) as checked:
        correct.CASES[case]()  # asserts its outputs against torch: the checked run computes real results
    report = checked.report
    assert report.launches >= 1 and report.programs >= report.launches
    assert report.findings == [], [f.message for f in report.findings]


@pytest.mark.parametrize("bug", buggy.BUGS, ids=[b.name for b in buggy.BUGS])
def test_planted_bug_is_found_at_its_line(bug: buggy.Bug):
    with deuteron.check(raise_on=None) as checked:
        bug.run()
    findings = [f for f in checked.report.findings if f.kind == bug.kind]
    assert findings, (
        f"{bug.name}: no {bug.kind} finding; got {[(f.kind, f.line) for f in checked.report.findings]}"
    )
    lines = buggy.bug_lines(bug)
    hit = [f for f in findings if f.line in lines]
    assert hit, (
        f"{bug.name}: {bug.kind} reported at {[f.line for f in findings]}, expected one of {sorted(lines)}"
    )
    f = hit[0]
    assert f.kernel == bug.kernel
    assert f.file == str(Path(buggy.__file__).resolve()) or Path(f.file).samefile(buggy.__file__)
    if bug.tensor is not None:
        assert f.tensor == bug.tensor
    if bug.kind in ("out-of-bounds", "race", "nan"):
        assert f.program is not None and len(f.program) == 3
    # Nothing else is reported as an error: the other checks stay quiet on the rest of the kernel.
    errors = [g for g in checked.report.findings if g.severity == "error" and g.kind != bug.kind]
    assert errors == []


def test_out_of_bounds_details_and_real_outputs():
    x, y = torch.rand(1000), torch.rand(1000)
    out = torch.zeros(1000)
    with deuteron.check(raise_on=None) as checked:
        buggy.add_unmasked_load_kernel[(4,)](x, y, out, 1000, BLOCK=256)
    torch.testing.assert_close(out, x + y)  # the masked store still wrote the right values
    (f,) = checked.report.findings
    assert (f.kind, f.severity, f.tensor, f.program) == ("out-of-bounds", "error", "x_ptr", (3, 0, 0))
    assert f.details["element_offsets"] == list(range(1000, 1008))
    assert f.details["lanes"][0] == 1000 - 3 * 256  # the first lane past the end in program 3
    assert f.details["valid_offsets"] == [0, 999]
    assert "1000..1023" in f.message and "shape (1000,)" in f.message
    assert f.programs == 1 and f.column is not None  # the caret's column


def test_unmasked_lanes_past_a_view_inside_its_storage_are_a_warning():
    """Past a view but inside its storage is real memory (no error, not masked off) but not the
    view's: an ``outside-view`` warning, with the lanes' indices (issue 13 replaced the old rule
    that a view may address its whole storage)."""
    base = torch.rand(2000)
    view = base[:1000]
    out = torch.zeros(1000)
    with deuteron.check(raise_on=None) as checked:
        buggy.add_unmasked_load_kernel[(4,)](view, view, out, 1000, BLOCK=256)
    (f,) = checked.report.findings
    assert (f.kind, f.severity, f.tensor, f.program) == ("outside-view", "warning", "x_ptr", (3, 0, 0))
    assert f.details["index"] == [1000] and f.details["element_offsets"][:2] == [1000, 1001]


def test_findings_group_by_line_and_count_programs():
    n = 1000
    x = torch.rand(n)
    out = torch.empty(n + 300)  # every program's chunk overlaps the next one's first element
    with deuteron.check(raise_on=None) as checked:
        for _ in range(2):
            buggy.chunked_cumsum_kernel[(8,)](x, out, n, BLOCK=128)
    races = [f for f in checked.report.findings if f.kind == "race"]
    assert len(races) == 1
    assert races[0].programs == 2 * 7 and races[0].launches == 2
    assert checked.report.launches == 2 and checked.report.programs == 16


def test_raise_on_and_fail_fast():
    x, y, out = torch.rand(1000), torch.rand(1000), torch.zeros(1000)
    with pytest.raises(deuteron.CheckFailed, match="out-of-bounds in add_unmasked_load_kernel"):
        with deuteron.check():
            buggy.add_unmasked_load_kernel[(4,)](x, y, out, 1000, BLOCK=256)
    with deuteron.check(raise_on="error") as quiet:  # a warning does not raise at "error"
        buggy.BUGS[[b.name for b in buggy.BUGS].index("nan_origin")].run()
    assert [f.kind for f in quiet.report.findings] == ["nan"]
    with pytest.raises(FindingLimitReached) as stopped:
        with deuteron.check(fail_fast=True):
            buggy.add_unmasked_load_kernel[(4,)](x, y, out, 1000, BLOCK=256)
            pytest.fail("fail_fast did not stop at the first error")
    assert stopped.value.finding.line in buggy.bug_lines(buggy.BUGS[0])
    with pytest.raises(ValueError, match="raise_on"):
        deuteron.check(raise_on="fatal")
    with pytest.raises(ValueError, match="unknown check"):
        deuteron.check(checks=["races"])


def test_selected_checks_only():
    x, y, out = torch.rand(1000), torch.rand(1000), torch.zeros(1000)
    with deuteron.check(checks=["race", "nan"], raise_on=None) as checked:
        buggy.add_unmasked_load_kernel[(4,)](x, y, out, 1000, BLOCK=256)
    # out-of-bounds lanes are still masked off (memory safety is not a check one can turn off) ...
    torch.testing.assert_close(out, x + y)
    # ... but only the chosen checks report
    assert checked.report.findings == []


def test_kernel_that_raises_propagates_and_is_counted():
    with deuteron.check(raise_on=None) as checked:
        with pytest.raises(Exception, match="Cannot make_shape_compatible|incompatible"):
            raises.run()
    assert checked.report.launches == 1 and checked.report.failed_launches == 1


def test_check_and_profile_at_once_and_after():
    """One adapter serves both: the profile's byte counts stay exact with a check attached and after it."""
    from triton.runtime import interpreter

    from tests.helpers.kernels import add

    x, y = torch.rand(1000), torch.rand(1000)
    with deuteron.profile(backend="interpreter") as p:
        with deuteron.check() as checked:
            add(x, y, block=256)
        builder = vars(interpreter.interpreter_builder)
        assert "set_grid_idx" not in builder and "create_masked_load" in builder  # check's wrappers are gone
        add(x, y, block=256)
    assert not {"set_grid_idx", "create_masked_load"} & set(vars(interpreter.interpreter_builder))
    prof = p.result
    (kernel,) = [n for n in prof.root.walk() if n.name == "add_kernel"]
    assert kernel.metrics["count"] == 2 and kernel.metrics["bytes"] == 2 * 3 * 4 * 1000
    assert checked.report.launches == 1 and checked.report.findings == []


def test_read_buffer_folds_when_it_outgrows_the_shadow():
    """Reads are buffered per allocation; past 4 cells per element they fold into the shadow,
    and a read/write race across the fold is still found."""
    storage = adapter.StorageArea(start=4096, nbytes=4 * 16, granule=4, tensors=(0,))
    tensor = adapter.TensorArg("x", (16,), (1,), "float32", 4, 4096, 0)
    launch = adapter.LaunchInfo(
        0,
        "k",
        "k.py",
        (2, 1, 1),
        [tensor],
        [storage],
        np.array([4096], np.uint64),
        np.array([4096 + 64], np.uint64),
    )
    findings = Findings()
    memory = MemoryChecks(findings)
    pids = [(0, 0, 0), (1, 0, 0)]
    memory.begin(launch, pids)
    memory.program(0)
    addresses = np.arange(4096, 4096 + 64, 4, dtype=np.uint64)
    for _ in range(70000 // 16 + 2):  # past 4*16 + 65536 lanes: folds at least once
        memory.access(adapter.Access(adapter.LOAD, addresses, 4, -1, storage=0))
    assert memory.shadows[0].rmin is not None and memory.shadows[0].pending_lanes < 70000
    memory.program(1)
    memory.access(adapter.Access(adapter.STORE, addresses[:1], 4, -1, storage=0))
    memory.finish()
    (race,) = [f for f in findings.all() if f.kind == "race"]
    assert race.kind == "race" and race.program == (1, 0, 0) and race.details["other_program"] == [0, 0, 0]


# -- command line -----------------------------------------------------------------------------

SCRIPT = """
import sys
import torch
import triton
from tests.check_corpus import buggy

x, y, out = torch.rand(1000), torch.rand(1000), torch.zeros(1000)
buggy.add_unmasked_load_kernel[(4,)](x, y, out, 1000, BLOCK=256)
print("ok:", bool(torch.allclose(out, x + y)), sys.argv[1:])
"""


def test_cli_reports_json_and_exit_1(tmp_path: Path):
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    proc = run_cli("check", "--json", "r.json", "--no-color", str(script), "--flag", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.strip() == "ok: True ['--flag']"  # real outputs, the script's own argv and stdout
    assert "error   out-of-bounds  add_unmasked_load_kernel" in proc.stderr
    assert "x = tl.load(x_ptr + offs)" in proc.stderr and "^^^^" in proc.stderr
    assert "1 launch and 4 programs checked: 1 error, 0 warnings, 0 info" in proc.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert (report["launches"], report["programs"]) == (1, 4)
    (f,) = report["findings"]
    assert {k: f[k] for k in ("kind", "severity", "kernel", "program", "tensor")} == {
        "kind": "out-of-bounds",
        "severity": "error",
        "kernel": "add_unmasked_load_kernel",
        "program": [3, 0, 0],
        "tensor": "x_ptr",
    }
    assert f["line"] in buggy.bug_lines(buggy.BUGS[0]) and Path(f["file"]).name == "buggy.py"
    assert "first element 1000..1023" in f["message"]


def test_cli_keeps_exit_code_without_findings_and_runs_non_triton_scripts(tmp_path: Path):
    (tmp_path / "plain.py").write_text("import sys\nprint('hello')\nsys.exit(3)\n")
    proc = run_cli("check", "plain.py", cwd=tmp_path)
    assert proc.returncode == 3 and proc.stdout == "hello\n"
    assert "no Triton kernel ran in the interpreter" in proc.stderr
    assert "0 launches and 0 programs checked: 0 errors" in proc.stderr
    ok = tmp_path / "ok.py"
    ok.write_text("from tests.check_corpus import correct\ncorrect.CASES['matmul']()\nprint('fine')\n")
    proc = run_cli("check", str(ok), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "0 errors, 0 warnings, 0 info" in proc.stderr


@pytest.mark.slow
def test_cli_module_pytest_and_fail_on(tmp_path: Path):
    (tmp_path / "nanmod.py").write_text(
        "from tests.check_corpus import buggy\n[b for b in buggy.BUGS if b.name == 'nan_origin'][0].run()\n"
    )
    proc = run_cli("check", "-m", "nanmod", cwd=tmp_path)
    assert proc.returncode == 0 and "warning nan" in proc.stderr, proc.stderr  # shown, not failing
    assert run_cli("check", "--fail-on", "warning", "-m", "nanmod", cwd=tmp_path).returncode == 1
    (tmp_path / "test_k.py").write_text(
        "from tests.check_corpus import buggy\n\n"
        "def test_race():\n"
        "    [b for b in buggy.BUGS if b.name == 'overlapping_stores'][0].run()\n"
    )
    proc = run_cli("check", "pytest", "-q", "-p", "no:cacheprovider", "test_k.py", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout and "error   race" in proc.stderr


def test_cli_fail_fast_stops_at_the_first_error(tmp_path: Path):
    script = tmp_path / "two.py"
    script.write_text(
        SCRIPT + "buggy.add_unmasked_load_kernel[(4,)](x, y, out, 1000, BLOCK=256)\nprint('second')\n"
    )
    proc = run_cli("check", "--fail-fast", "--json", "r.json", str(script), cwd=tmp_path)
    assert proc.returncode == 1
    assert "ok:" not in proc.stdout and "second" not in proc.stdout
    assert "stopped at the first error (--fail-fast)" in proc.stderr
    assert json.loads((tmp_path / "r.json").read_text())["findings"][0]["kind"] == "out-of-bounds"


def test_cli_program_that_raises_before_any_kernel(tmp_path: Path):
    (tmp_path / "early.py").write_text("raise SystemError('no GPU setup here')\n")
    proc = run_cli("check", "early.py", cwd=tmp_path)
    assert proc.returncode == 1 and "SystemError: no GPU setup here" in proc.stderr
    assert "the program ended before any Triton kernel ran" in proc.stderr
    assert "TRITON_INTERPRET unset" not in proc.stderr


def test_cli_kernel_that_raises(tmp_path: Path):
    (tmp_path / "boom.py").write_text("from tests.check_corpus import raises\nraises.run()\n")
    proc = run_cli("check", "boom.py", cwd=tmp_path)
    assert proc.returncode == 1
    assert "Traceback" in proc.stderr and "boom.py" in proc.stderr
    assert "1 launch (1 raised) and" in proc.stderr and "the program raised" in proc.stderr


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["missing.py"], "script 'missing.py' does not exist"),
        ([], "nothing to run"),
        (["--checks", "race,oob", "x.py"], "unknown check oob"),
        (["--json", "nowhere/r.json", "x.py"], "does not exist"),
        (["--record", ".", "x.py"], "is a folder"),
        (["-m", "no_such_module_xyz"], "no module named 'no_such_module_xyz'"),
    ],
)
def test_cli_bad_input_is_one_line(tmp_path: Path, args: list[str], needle: str):
    (tmp_path / "x.py").write_text("print('x')\n")
    proc = run_cli("check", *args, cwd=tmp_path)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert lines[-1].startswith("deuteron: error: ") and needle in lines[-1], proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_record_file(tmp_path: Path):
    script = tmp_path / "rec.py"
    script.write_text(
        "import torch\nfrom tests.helpers.kernels import add\n"
        "add(torch.rand(1000), torch.rand(1000), block=256)\n"
    )
    proc = run_cli("check", "--record", "acc.npz", str(script), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    header, accesses, offsets = read_record(tmp_path / "acc.npz")
    assert header["format"] == "deuteron-access-record" and header["version"] == 2
    (launch,) = header["launches"]
    assert launch["kernel"] == "add_kernel" and launch["grid"] == [4, 1, 1] and len(launch["programs"]) == 4
    assert [t["name"] for t in launch["tensors"]] == ["x_ptr", "y_ptr", "out_ptr"]
    assert offsets.size == 3 * 1000 and header["dropped_lanes"] == 0
    stores = accesses[accesses["kind"] == 1]
    assert int(stores["count"].sum()) == 1000
    out_storage = launch["tensors"][2]["storage"]
    stored = np.concatenate([offsets[r["start"] : r["start"] + r["count"]] for r in stores])
    assert set(stores["storage"]) == {out_storage}
    assert np.array_equal(np.sort(stored), np.arange(1000) * 4)
    assert {Path(s["file"]).name for s in header["sites"]} == {"vector_add.py"}
    # a bounded record: past the limit, rows stay and lanes are dropped
    proc = run_cli("check", "--record", "small.npz", "--record-limit", "1500", str(script), cwd=tmp_path)
    header, accesses, offsets = read_record(tmp_path / "small.npz")
    assert offsets.size <= 1500 and header["dropped_lanes"] == 3000 - offsets.size and len(accesses) == 12
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a deuteron access record"):
        read_record(tmp_path / "junk.npz")


def test_triton_version_is_supported():
    major, minor = (int(p) for p in triton.__version__.split(".")[:2])
    assert SUPPORTED_TRITON[0] <= (major, minor) <= SUPPORTED_TRITON[1]
    assert REPO.is_dir()


def test_readme_example(tmp_path: Path):
    example = REPO / "examples" / "check_me.py"
    proc = run_cli("check", "--json", "r.json", str(example), cwd=tmp_path)
    assert proc.returncode == 1 and "DIFFERS from torch" in proc.stdout, proc.stderr
    (f,) = json.loads((tmp_path / "r.json").read_text())["findings"]
    load_line = next(i for i, t in enumerate(example.read_text().splitlines(), 1) if "x = tl.load(" in t)
    expected = ("out-of-bounds", load_line, [63, 0, 0], "x_ptr")
    assert (f["kind"], f["line"], f["program"], f["tensor"]) == expected
    fixed = run_cli("check", str(example), "--fixed", cwd=tmp_path)
    assert fixed.returncode == 0 and "matches torch" in fixed.stdout, fixed.stderr


def test_store_coverage_counts_the_view_not_its_storage():
    x = torch.randn(1000)
    storage = torch.zeros(3000)
    out = storage[1000:2000]  # a view in the middle of a bigger allocation
    other = storage.view(1000, 3)[:, 0]  # a strided view of the same storage, never written
    with deuteron.check(raise_on=None) as checked:
        buggy.scale_kernel[(3,)](x, out, 1000, BLOCK=256)
        buggy.add_unmasked_load_kernel[(1,)](other, other, torch.empty(256), 256, BLOCK=256)  # reads it
    (f,) = [f for f in checked.report.findings if f.kind == "store-coverage"]
    assert f.tensor == "out_ptr"
    assert f.details == {"unwritten": 232, "elements": 1000, "first_unwritten": [768]}
    torch.testing.assert_close(out[:768], x[:768] * 2)


def test_nan_origin_follows_lanes():
    from tests.check_corpus import edge

    x, d, y = torch.ones(10), torch.ones(10), torch.empty(10)
    x[3] = float("nan")  # a NaN in the input is not the kernel's doing
    with deuteron.check(raise_on=None) as checked:
        edge.ratio_kernel[(1,)](x, d, y, 10, BLOCK=16)
    assert checked.report.findings == []
    x[3] = 1.0
    with deuteron.check(raise_on=None) as checked:
        edge.shifted_sqrt_kernel[(1,)](x, d, y, 10, BLOCK=16)
    (f,) = checked.report.findings
    assert (f.kind, f.line, f.details["op"]) == ("nan", edge.edge_line("nan"), "sqrt")
    with deuteron.check(raise_on=None) as checked:
        edge.to_half_kernel[(1,)](torch.full((16,), 1e6), torch.empty(16, dtype=torch.float16), BLOCK=16)
    (f,) = checked.report.findings
    assert (f.kind, f.line, f.details["produced"]) == ("nan", edge.edge_line("cast"), "inf")


def test_views_of_one_buffer_with_different_dtypes():
    from tests.check_corpus import edge

    buf = torch.zeros(64)
    with deuteron.check(raise_on=None) as checked:
        edge.fill_kernel[(1,)](buf, buf.view(torch.int8), BLOCK=64)  # every byte of the int8 view too
    assert checked.report.findings == []
    with deuteron.check(raise_on=None) as checked:
        edge.two_views_kernel[(2,)](buf, buf.view(torch.int8))
    races = [f for f in checked.report.findings if f.kind == "race"]
    assert [(f.line, f.program) for f in races] == [(edge.edge_line("race"), (1, 0, 0))]


def test_nested_checks_both_hear_every_launch():
    x, y, out = torch.rand(1000), torch.rand(1000), torch.zeros(1000)
    with deuteron.check(raise_on=None) as outer:
        with deuteron.check(raise_on=None) as inner:
            buggy.add_unmasked_load_kernel[(4,)](x, y, out, 1000, BLOCK=256)
        buggy.add_unmasked_load_kernel[(4,)](x, y, out, 1000, BLOCK=256)
    assert (inner.report.launches, outer.report.launches) == (1, 2)
    assert [f.kind for f in inner.report.findings] == ["out-of-bounds"]
    assert [f.kind for f in outer.report.findings] == ["out-of-bounds"]
    assert outer.report.findings[0].launches == 2


def test_no_coverage_finding_for_a_launch_stopped_by_fail_fast(tmp_path: Path):
    example = REPO / "examples" / "check_me.py"
    proc = run_cli("check", "--fail-fast", "--json", "r.json", str(example), cwd=tmp_path)
    assert proc.returncode == 1
    kinds = [f["kind"] for f in json.loads((tmp_path / "r.json").read_text())["findings"]]
    assert kinds == ["out-of-bounds"]
