"""``deuteron repro`` (issue 42): any recorded Triton launch, alone in a file that reruns it.

In-process round trips over the repository's own kernels (the learn exercises' reference solutions,
tests/check_corpus, tests/explain_corpus, examples/): record a real launch, write its reproducer,
run it with ``--check``; its outputs must match the recorded ones. The cases each stress one
thing a reproducer must carry: an autotuned kernel (the chosen config pinned, the benchmarks not
recorded), a ``@triton.jit`` helper, views (a storage offset, strides, two arguments sharing one
storage), scalars and constexprs, libdevice, values past the byte limit (made from statistics).
End to end, in real processes: ``deuteron run --record-launches``, ``deuteron repro``, ``python
repro.py`` with and without ``TRITON_INTERPRET``, ``deuteron run``/``check``/``explain`` on it; and
every bad input as one ``deuteron: error`` line and exit 2.
"""

from __future__ import annotations

import contextlib
import io
import runpy
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch

from deuteron.cli import main as cli_main
from deuteron.collect.context.torch.unobserved import unobserved
from deuteron.formats import FormatError, hatchet, launch_record
from deuteron.learn.exercises import all_exercises
from deuteron.learn.loader import load_kernel
from deuteron.model.tree import KERNEL
from deuteron.process.patches import MANAGER
from deuteron.repro.api import Recording, write_repro
from deuteron.repro.errors import ReproError
from deuteron.repro.record import byte_limit, recording
from deuteron.triton.interpreter import adapter
from deuteron.triton.runtime import launch_capture
from tests.check_corpus import correct, patterns
from tests.explain_corpus import assorted, bound_libdevice, dot_helper_twice, transpose, vector_copy
from tests.helpers.cli import fresh_process_env, run_cli
from tests.helpers.paths import REPO
from tests.helpers.profiles import kernels, timed_profile

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


@contextlib.contextmanager
def interpreted() -> Iterator[None]:
    """Triton's interpreter as ``deuteron run`` sets it up: the autotuner runs each config once,
    libdevice and the emulated driver are there."""
    adapter.install(lambda record: None)
    try:
        yield
    finally:
        adapter.uninstall()


def record(folder: Path, launch: Callable[[], object], limit: int | None = None) -> Recording:
    with recording(limit) as recorder:
        launch()
    path = recorder.write(folder / "run.launches.npz")
    return Recording(folder / "run.hatchet", launch_record.read(path))


def rerun(script: Path, *argv: str) -> tuple[int, str]:
    """``python script ARGV`` in this process (the interpreter is already set up): exit code, stdout."""
    out, saved = io.StringIO(), sys.argv
    sys.argv = [str(script), *argv]
    try:
        with contextlib.redirect_stdout(out):
            try:
                runpy.run_path(str(script), run_name="__main__")
                code = 0
            except SystemExit as exc:
                code = int(exc.code or 0)
    finally:
        sys.argv = saved
    return code, out.getvalue()


def round_trip(folder: Path, launch: Callable[[], object], kernel: str, **kw: object) -> tuple[Path, str]:
    """Record, write the kernel's (last) launch, rerun it with --check; (the script, what it printed)."""
    with interpreted():
        recorded = record(folder, launch, kw.pop("limit", None))  # type: ignore[arg-type]
        script, _, _, _ = write_repro(recorded, kernel, kw.pop("number", None), folder / "repro.py")  # type: ignore[arg-type]
        code, out = rerun(script, "--check")
    assert code == 0, out
    return script, out


# --- the corpora --------------------------------------------------------------------------------


def _exercise(number: int) -> tuple[Callable[[], object], str]:
    """A learn exercise's reference solution, launched on its last (largest) case."""
    ex = all_exercises()[number - 1]

    def go() -> None:
        case = ex.cases[-1]
        ex.launch(
            load_kernel(ex.solution_path, ex.kernel), ex.make(case, torch.Generator().manual_seed(7)), case
        )

    return go, ex.kernel


def _explain_corpus(name: str) -> Callable[[], object]:
    def go() -> None:
        torch.manual_seed(0)
        if name == "twice":
            a, b = torch.randn(32, 32), torch.randn(32, 32)
            dot_helper_twice.twice_kernel[(1,)](a, b, torch.empty_like(a))
        elif name == "transpose":
            x = torch.randn(3, 16, 16)
            transpose.transpose_kernel[(1,)](x, torch.empty(16, 16), 3, BLOCK=16)
        elif name == "copy":
            src = torch.arange(2048 + 64, dtype=torch.float32)
            vector_copy.copy_kernel[(2,)](src, torch.empty(2048), 5, BLOCK=1024)
        else:
            x, y = torch.randn(2048 + 16), torch.empty(2048)
            if name == "pair":
                assorted.pair_add_kernel[(2,)]((x, x), y, BLOCK=1024)
            elif name == "shifted":
                assorted.shifted_copy_kernel[(2,)](x, 1, y, 3, BLOCK=1024)
            else:
                idx = torch.randint(0, 2048, (2048,), dtype=torch.int32)
                assorted.gather_kernel[(2,)](x, idx, y, BLOCK=1024)

    return go


CORPUS: dict[str, tuple[Callable[[], object], str]] = {
    **{f"learn{n:02d}": _exercise(n) for n in range(1, 13)},
    "softmax": (correct.softmax, "softmax_kernel"),
    "layernorm": (correct.layernorm, "layernorm_kernel"),
    "matmul_ieee": (correct.matmul, "matmul_kernel"),
    "histogram": (correct.histogram, "histogram_kernel"),
    "scale_shift": (correct.masked_tail, "scale_shift_kernel"),
    "transposed_view": (correct.masked_tail, "copy_2d_kernel"),
    "attention_fwd": (correct.attention, "attention_fwd_kernel"),
    "inplace": (correct.inplace_scale, "inplace_scale_kernel"),
    "examples_add": (correct.vector_add, "add_kernel"),
    "concat": (patterns.concat, "concat_kernel"),
    "padded_view": (patterns.padded_view, "copy_rows_kernel"),
    "spin_lock": (patterns.grouped_sum, "grouped_sum_kernel"),
    "autotuned": (patterns.autotuned, "tuned_axpy_kernel"),
    "static_assert_configs": (patterns.rejected_config, "small_block_kernel"),
    "libdevice": (patterns.libdevice_norm, "rms_norm_kernel"),
    "libdevice_bound_by_name": (bound_libdevice.launch, "bound_norm_kernel"),
    "helper": (_explain_corpus("twice"), "twice_kernel"),
    "loop_transpose": (_explain_corpus("transpose"), "transpose_kernel"),
    "offset_scalar": (_explain_corpus("copy"), "copy_kernel"),
    "tuple_argument": (_explain_corpus("pair"), "pair_add_kernel"),
    "one_and_offset": (_explain_corpus("shifted"), "shifted_copy_kernel"),
    "gather": (_explain_corpus("gather"), "gather_kernel"),
}


@pytest.mark.parametrize("case", list(CORPUS))
def test_a_recorded_launch_reruns_alone_and_its_outputs_match(case: str, tmp_path: Path) -> None:
    launch, kernel = CORPUS[case]
    script, out = round_trip(tmp_path, launch, kernel)
    assert "outputs match" in out, out
    assert f"{kernel}: launch " in out and "on the CPU, in Triton's interpreter" in out
    text = script.read_text()
    assert "import deuteron" not in text and "from deuteron" not in text, "the file is the user's alone"


def test_the_file_carries_helpers_decorators_and_the_autotuners_choice(tmp_path: Path) -> None:
    helper, _ = round_trip(_sub(tmp_path, "h"), _explain_corpus("twice"), "twice_kernel")
    text = helper.read_text()
    assert text.index("def _mm(") < text.index("def twice_kernel(")
    assert text.count("@triton.jit") == 2
    tuned, _ = round_trip(_sub(tmp_path, "t"), patterns.autotuned, "tuned_axpy_kernel")
    text = tuned.read_text()
    assert "# Left out: @triton.autotune(" in text and "\n@triton.autotune" not in text
    assert "The autotuner chose BLOCK=64, num_warps=2" in text and "of 3 configs, key: n" in text
    assert "BLOCK=64" in text.split("def launch(", 1)[1]


def test_the_autotuners_benchmarks_are_not_recorded(tmp_path: Path) -> None:
    with interpreted():
        recorded = record(tmp_path, patterns.autotuned)
    [kernel] = recorded.kernels()
    assert kernel.name == "tuned_axpy_kernel" and len(kernel.launches) == 1  # not the 3 benchmarks too
    assert kernel.launches[0]["tuner"]["configs"] == 3


def test_a_view_keeps_its_offset_alignment_and_a_shared_storage_stays_shared(tmp_path: Path) -> None:
    def shifted() -> None:
        base = torch.randn(1010)
        correct.scale_shift_kernel[(4,)](base[3:1003], torch.empty(1000), 1000, BLOCK=256)

    with interpreted():
        recorded = record(tmp_path, shifted)
    [x, _] = recorded.kernels()[0].launches[0]["buffers"]
    assert (x["start"], x["size"], x["pad"]) == (3, 1000, 3)  # 12 bytes past a 16-byte boundary, as recorded
    script, out = round_trip(_sub(tmp_path, "a"), shifted, "scale_shift_kernel")
    assert 'recorded("x_ptr", torch.float32, 1000, pad=3)' in script.read_text()
    pair, _ = round_trip(_sub(tmp_path, "b"), _explain_corpus("pair"), "pair_add_kernel")
    launch_text = pair.read_text().split("def launch(", 1)[1]
    assert launch_text.count('bufs["ptrs_0"]') == 2, launch_text  # (x, x): one storage, two views


def _sub(folder: Path, name: str) -> Path:
    (folder / name).mkdir()
    return folder / name


def test_scalars_and_constexprs_are_passed_as_recorded(tmp_path: Path) -> None:
    script, _ = round_trip(tmp_path, correct.layernorm, "layernorm_kernel")
    launch_text = script.read_text().split("def launch(", 1)[1]
    assert "eps = 1e-05" in launch_text and "N = 50" in launch_text
    call = launch_text.split("layernorm_kernel[(7, 1, 1)](", 1)[1]
    expected = "x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, row_stride, N, eps, BLOCK=16 )"
    assert " ".join(call.split()).startswith(expected)


def test_past_the_byte_limit_values_are_made_from_statistics_and_it_says_so(tmp_path: Path) -> None:
    launch, kernel = _exercise(8)  # a gather: its indices stay inside their recorded range
    script, out = round_trip(tmp_path, launch, kernel, limit=0)
    text = script.read_text()
    assert "past the record's byte limit (DEUTERON_RECORD_BYTES)" in " ".join(text.split())
    assert "like(torch.int64, 45, pad=0, low=-1, high=49" in text  # indices within their recorded range
    assert "made from recorded statistics (past DEUTERON_RECORD_BYTES)" in out
    assert "outputs not compared" in out


def test_outputs_past_the_limit_are_not_compared_and_it_says_so(tmp_path: Path) -> None:
    def add() -> None:
        correct.vector_add()

    script, out = round_trip(tmp_path, add, "add_kernel", limit=2 * 999 * 4 + 999 * 4)  # inputs, out before
    assert "not compared: out_ptr" in out, out


def test_a_changed_kernel_fails_the_check_at_the_first_mismatch(tmp_path: Path) -> None:
    script, _ = round_trip(tmp_path, correct.vector_add, "add_kernel")
    script.write_text(
        script.read_text().replace("tl.store(out_ptr + offs, x + y", "tl.store(out_ptr + offs, x - y")
    )
    with interpreted():
        code, out = rerun(script, "--check")
    assert code == 1
    assert "mismatch in out_ptr at index (" in out and "of 999 differ" in out, out


def test_recording_is_off_unless_asked_and_costs_nothing_then() -> None:
    assert not MANAGER.holds(launch_capture.GROUP)
    with recording():
        assert MANAGER.holds(launch_capture.GROUP)
    assert not MANAGER.holds(launch_capture.GROUP)


def test_the_recorders_torch_work_is_not_the_programs() -> None:
    """Its copies run with torch's op observers off (``-c torch`` would show them as the program's)."""
    with torch.autograd.profiler.profile() as seen:
        with unobserved():
            torch.ones(3).clone()
        torch.zeros(2).add_(1)
    names = {event.name for event in seen.function_events}
    assert "aten::clone" not in names and "aten::add_" in names


def test_a_bad_byte_limit_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEUTERON_RECORD_BYTES", "lots")
    with pytest.raises(ReproError, match="DEUTERON_RECORD_BYTES must be a whole number of bytes, not 'lots'"):
        byte_limit()
    monkeypatch.setenv("DEUTERON_RECORD_BYTES", "1_000")
    assert byte_limit() == 1000


def test_a_damaged_record_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "x.launches.npz"
    bad.write_bytes(b"PK\x03\x04 not a zip")
    with pytest.raises(FormatError, match="is not a deuteron launch record"):
        launch_record.read(bad)


# --- end to end, in real processes ----------------------------------------------------------------


@pytest.fixture(scope="module")
def recorded_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``deuteron run --record-launches`` of the README's example, and ``deuteron repro`` of its
    second vector add: the folder holding prof.hatchet, prof.launches.npz, repro.py, repro.npz."""
    folder = tmp_path_factory.mktemp("recorded")
    (folder / "examples").symlink_to(REPO / "examples")
    words = ["--record-launches", "-n", "prof", "examples/vector_add.py", "--n", "3000", "--size", "16"]
    run = run_cli("run", *words, cwd=folder)
    assert run.returncode == 0, run.stderr
    assert "wrote" in run.stderr and "prof.launches.npz" in run.stderr
    made = run_cli(
        "repro", "prof.hatchet", "--kernel", "add_kernel", "--launch", "2", "-o", "repro.py", cwd=folder
    )
    assert made.returncode == 0, made.stderr
    assert "wrote repro.py and repro.npz: add_kernel, launch 2 of 2" in made.stderr
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("interpret", ["", "1"])
def test_python_runs_the_file_with_or_without_triton_interpret(recorded_run: Path, interpret: str) -> None:
    env = fresh_process_env({"TRITON_INTERPRET": interpret} if interpret else None)
    proc = subprocess.run([sys.executable, "repro.py", "--check"], cwd=recorded_run, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "add_kernel: launch 2 of 2, grid (3, 1, 1), on the CPU, in Triton's interpreter" in proc.stdout
    assert "outputs match: out_ptr; unchanged, as recorded: x_ptr, y_ptr" in proc.stdout


@pytest.mark.slow
def test_the_list_and_deuteron_run_and_check_take_the_file(recorded_run: Path) -> None:
    listed = run_cli("repro", "--list", "prof.hatchet", cwd=recorded_run)
    assert listed.returncode == 0, listed.stderr
    assert "prof.hatchet: 4 recorded launches of 2 kernels" in listed.stdout
    assert any(line.split()[:3] == ["matmul_kernel", "2", "0"] for line in listed.stdout.splitlines())
    checked = run_cli("check", "repro.py", cwd=recorded_run)
    assert checked.returncode == 0 and "Traceback" not in checked.stderr, checked.stderr
    assert "add_kernel: launch 2 of 2" in checked.stdout
    profiled = run_cli("run", "-n", "again", "repro.py", cwd=recorded_run)
    assert profiled.returncode == 0, profiled.stderr
    assert "add_kernel" in kernels(hatchet.read(recorded_run / "again.hatchet"))


@pytest.mark.slow
def test_deuteron_explain_takes_the_file(recorded_run: Path) -> None:
    proc = run_cli("explain", "repro.py", cwd=recorded_run, timeout=300)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "add_kernel" in proc.stdout


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    try:
        code = cli_main(list(args))
    except SystemExit as exc:  # argparse's own refusals
        code = int(exc.code or 0)
    return code, capsys.readouterr().err


@pytest.fixture
def recorded_profile(tmp_path: Path) -> Path:
    """A profile whose metadata names its record: two launches of add_kernel, one of softmax_kernel."""
    with interpreted(), recording() as recorder:
        correct.vector_add()
        correct.vector_add()
        correct.softmax()
    recorder.write(tmp_path / "prof.launches.npz")
    profile = timed_profile({"add_kernel": (1.0, KERNEL), "softmax_kernel": (1.0, KERNEL)})
    profile.metadata[launch_record.METADATA_KEY] = {"file": "prof.launches.npz", **recorder.summary()}
    hatchet.write(profile, tmp_path / "prof.hatchet")
    return tmp_path / "prof.hatchet"


def test_bad_inputs_are_one_line_and_exit_2(
    recorded_profile: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    work = _sub(tmp_path, "work")
    monkeypatch.chdir(work)
    prof = str(recorded_profile)
    profile = hatchet.read(prof)
    del profile.metadata[launch_record.METADATA_KEY]
    hatchet.write(profile, work / "plain.hatchet")
    shutil.copy(prof, work / "alone.hatchet")  # its record stays behind
    cases = {
        ("repro", prof, "--kernel", "nope"): "no recorded launch of 'nope' in ",
        ("repro", prof, "--kernel", "add_kernel", "--launch", "3"): "add_kernel ran 2 times in ",
        ("repro", prof, "--kernel", "softmax_kernel", "--launch", "2"): "softmax_kernel ran once in ",
        ("repro", prof, "--launch", "0"): "launches are numbered from 1, not 0",
        ("repro", prof): "launches of 2 kernels (add_kernel, softmax_kernel): choose one with --kernel",
        ("repro", "plain.hatchet"): "plain.hatchet has no recorded launches: record them with deuteron run "
        "--record-launches",
        ("repro", "alone.hatchet", "-k", "add_kernel"): "prof.launches.npz is missing: deuteron run "
        "--record-launches writes it beside alone.hatchet",
        ("repro", "none.hatchet"): "none.hatchet: no such file",
    }
    for args, says in cases.items():
        code, err = _cli(capsys, *args)
        assert code == 2, (args, err)
        assert err.startswith("deuteron: error: ") and err.count("\n") == 1 and says in err, (args, err)
    assert not list(work.glob("*.py")) and not list(work.glob("*.npz")), "nothing is written on an error"
    code, err = _cli(capsys, "repro", prof, "-k", "add_kernel", "-l", "1", "-o", "first.py")
    assert code == 0 and "wrote first.py and first.npz: add_kernel, launch 1 of 2" in err, err


def test_dtypes_numpy_lacks_travel_as_their_bits(tmp_path: Path) -> None:
    def scale() -> None:
        x = (torch.randn(300) * 100).to(torch.bfloat16)
        correct.scale_shift_kernel[(2,)](x, torch.empty(300, dtype=torch.bfloat16), 300, BLOCK=256)

    script, out = round_trip(tmp_path, scale, "scale_shift_kernel")
    [x, y] = launch_record.read(tmp_path / "run.launches.npz").header["launches"][0]["buffers"]
    assert (x["dtype"], x["bits"], x["written"], y["written"]) == ("bfloat16", "int16", False, True)
    assert "outputs match: out_ptr" in out
