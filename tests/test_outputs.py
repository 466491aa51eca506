"""Nothing lost, nothing half-written: outputs are checked before the target runs, writes survive
full disks, signals during the write, forks, chdir and concurrent writers. Every case runs a real
``deuteron`` process; faults are real where the machine allows (a full tmpfs, /sys) and injected at
the write call from inside the profiled script otherwise."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from deuteron.formats import hatchet
from tests.helpers.cli import run_cli
from tests.helpers.paths import EXAMPLES, REPO
from tests.helpers.profiles import find, kernels

KERNEL = """
import os, sys, signal
import torch, triton
sys.path.insert(0, {repo!r})
from examples.vector_add import add_kernel

def launch(n=256):
    x = torch.rand(n); out = torch.empty_like(x)
    add_kernel[(triton.cdiv(n, 128),)](x, x, out, n, BLOCK=128)
"""


def _script(tmp_path: Path, body: str, name: str = "job.py") -> Path:
    path = tmp_path / name
    path.write_text(KERNEL.format(repo=str(REPO)) + textwrap.dedent(body))
    return path


def _python(script: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The script run plainly (it uses Deuteron's API itself), kernels in the interpreter."""
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    return subprocess.run(
        [sys.executable, str(script)], cwd=cwd, capture_output=True, text=True, env=env, timeout=120
    )


def _one_error_line(proc: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("deuteron: error:")]
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def _no_temporaries(folder: Path) -> None:
    left = [p.name for p in folder.iterdir() if p.name.endswith((".tmp", ".probe"))]
    assert left == []


# --- outputs are checked before the target runs -------------------------------------------------


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("run", "-n", "/nonexistent/dir/x"), "folder /nonexistent/dir does not exist"),
        (("run", "-n", "made_a_folder"), "is a folder"),
        (("run", "-n", "/sys/deuteron-test"), "cannot write in /sys"),
        (("run", "--trace", "-n", "both"), "is a folder"),
        (("check", "--json", "/nonexistent/r.json"), "does not exist"),
        (("check", "--record", "/sys/r.npz"), "cannot write in /sys"),
        (("explain", "--json", "/sys/e.json"), "cannot write in /sys"),
    ],
)
def test_unwritable_outputs_stop_before_the_target_runs(tmp_path: Path, args: tuple[str, ...], needle: str):
    (tmp_path / "made_a_folder.hatchet").mkdir()
    (tmp_path / "both.chrome_trace").mkdir()
    marker = tmp_path / "ran"
    script = _script(tmp_path, f"open({str(marker)!r}, 'w').close()\nlaunch()\n")
    proc = run_cli(*args, str(script), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    _one_error_line(proc, needle)
    assert not marker.exists()
    _no_temporaries(tmp_path)


def test_api_start_checks_the_file_and_fixes_its_path(tmp_path: Path):
    script = _script(
        tmp_path,
        """
        import deuteron
        try:
            deuteron.start("/nonexistent/x", backend="interpreter")
        except deuteron.DeuteronError as exc:
            print("refused:", exc)
        os.makedirs("elsewhere")
        deuteron.start("fixed", backend="interpreter")
        os.chdir("elsewhere")          # the profile does not follow the script
        launch()
        print(deuteron.finalize())
        """,
    )
    proc = _python(script, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (
        "refused: cannot write the profile: " in proc.stdout and "/nonexistent does not exist" in proc.stdout
    )
    assert (tmp_path / "fixed.hatchet").is_file() and not (tmp_path / "elsewhere" / "fixed.hatchet").exists()
    assert str(tmp_path / "fixed.hatchet") in proc.stdout  # absolute once the working folder moved


# --- failures at write time ---------------------------------------------------------------------

FULL_DISK = """
import errno, deuteron.formats.files as files
real_fdopen = files.os.fdopen
class Full:
    def __init__(self, f): self.f = f
    def write(self, data): raise OSError(errno.ENOSPC, "No space left on device")
    def __getattr__(self, name): return getattr(self.f, name)
    def __enter__(self): return self
    def __exit__(self, *a): self.f.close()
class FakeOs:
    def __getattr__(self, name): return getattr(os, name)
    @staticmethod
    def fdopen(*a, **k): return Full(real_fdopen(*a, **k))
files.os = FakeOs()
"""


@pytest.mark.parametrize("exit_code", [0, 3])
def test_a_full_disk_at_write_time_is_one_line_and_keeps_the_exit_code(tmp_path: Path, exit_code: int):
    script = _script(tmp_path, FULL_DISK + f"launch()\nsys.exit({exit_code})\n")
    proc = run_cli("run", "-n", "prof", str(script), cwd=tmp_path, env={"TMPDIR": str(tmp_path / "none")})
    _one_error_line(proc, "could not write", "prof.hatchet", "No space left on device")
    assert proc.returncode == (exit_code or 1)
    assert "at exit" not in proc.stderr  # finalized once, not again by the atexit hook
    assert not (tmp_path / "prof.hatchet").exists()
    _no_temporaries(tmp_path)


RECORD_DISK_FULL = """
import contextlib, errno, deuteron.formats.access_record as ar
real_open = ar.atomic_open
@contextlib.contextmanager
def full(path, mode="w"):
    with real_open(path, mode) as f:
        f.write(b"half a record")
        raise OSError(errno.ENOSPC, "No space left on device")
        yield f
ar.atomic_open = full
from tests.check_corpus import buggy
x, y, out = torch.rand(1000), torch.rand(1000), torch.zeros(1000)
buggy.add_unmasked_load_kernel[(4,)](x, y, out, 1000, BLOCK=256)
"""


def test_check_shows_its_findings_when_the_record_cannot_be_written(tmp_path: Path):
    script = _script(tmp_path, RECORD_DISK_FULL)
    proc = run_cli("check", "--record", "r.npz", "--json", "r.json", str(script), cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "error   out-of-bounds  add_unmasked_load_kernel" in proc.stderr  # the report came first
    _one_error_line(proc, "could not write", "r.npz", "No space left on device")
    assert "out-of-bounds" in (tmp_path / "r.json").read_text()
    assert not (tmp_path / "r.npz").exists()
    _no_temporaries(tmp_path)


@contextlib.contextmanager
def _tmpfs(where: Path, size: str) -> Iterator[Path]:
    where.mkdir()
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True
    )
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_really_full_disk(tmp_path: Path):
    """A 64 KiB tmpfs holds the script but not a profile of 3000 scopes."""
    with _tmpfs(tmp_path / "small", "64k") as small:
        script = _script(
            small, "import deuteron\nfor i in range(3000):\n    with deuteron.scope(f's{i}'): pass\n"
        )
        proc = run_cli("run", "-n", "prof", str(script), cwd=small, env={"TMPDIR": str(small)})
        _one_error_line(proc, "could not write", "No space left on device")
        assert proc.returncode == 1
        _no_temporaries(small)
        assert sorted(p.name for p in small.iterdir()) == ["job.py"]


def test_a_script_that_removes_its_folder_gets_its_profile_rescued(tmp_path: Path):
    work, rescue = tmp_path / "work", tmp_path / "rescue"
    work.mkdir()
    rescue.mkdir()
    script = _script(tmp_path, "import shutil\nlaunch()\nos.chdir('..')\nshutil.rmtree('work')\n")
    proc = run_cli("run", "-n", "gone", str(script), cwd=work, env={"TMPDIR": str(rescue)})
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {rescue / 'gone.hatchet'} instead" in proc.stderr
    assert kernels(hatchet.read(rescue / "gone.hatchet"))["add_kernel"].metrics["count"] == 1


# --- signals while the profile is written -------------------------------------------------------

SIGNAL_IN_WRITE = """
import deuteron.formats.hatchet as h
real = h.chunks
def chunks(profile):
    for sig in {signals}:
        os.kill(os.getpid(), sig)
    return real(profile)
h.chunks = chunks
"""


@pytest.mark.parametrize(
    ("signals", "expected"),
    [((signal.SIGTERM,), 143), ((signal.SIGINT,), 130), ((signal.SIGTERM, signal.SIGINT), 143)],
)
def test_signals_during_the_write_wait_for_the_file(tmp_path: Path, signals: tuple[int, ...], expected: int):
    nums = [int(s) for s in signals]
    script = _script(tmp_path, SIGNAL_IN_WRITE.format(signals=nums) + "for _ in range(3): launch()\n")
    proc = run_cli("run", "-n", "sig", str(script), cwd=tmp_path)
    assert proc.returncode == expected, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"{signal.Signals(signals[0]).name} arrived while the profile was written" in proc.stderr
    assert kernels(hatchet.read(tmp_path / "sig.hatchet"))["add_kernel"].metrics["count"] == 3
    _no_temporaries(tmp_path)


def test_api_finalize_finishes_the_file_then_obeys_the_signal(tmp_path: Path):
    script = _script(
        tmp_path,
        SIGNAL_IN_WRITE.format(signals=[int(signal.SIGTERM)])
        + "import deuteron\ndeuteron.start('api', backend='interpreter')\nlaunch()\ndeuteron.finalize()\n"
        + "print('not reached')\n",
    )
    proc = _python(script, tmp_path)
    assert proc.returncode == -signal.SIGTERM, (proc.returncode, proc.stderr)
    assert "not reached" not in proc.stdout
    assert kernels(hatchet.read(tmp_path / "api.hatchet"))["add_kernel"].metrics["count"] == 1
    _no_temporaries(tmp_path)


# --- forks and concurrent writers ---------------------------------------------------------------


def test_a_forked_child_never_writes_the_parents_profile(tmp_path: Path):
    script = _script(
        tmp_path,
        """
        import deuteron
        with deuteron.scope("parent"):
            launch()
            pid = os.fork()
            if pid == 0:
                launch()
                with deuteron.scope("child"):
                    launch()
                sys.exit(0)        # the child's atexit hooks run: they must not write
            os.waitpid(pid, 0)
            for _ in range(5):
                launch()
        """,
    )
    proc = run_cli("run", "-n", "forked", str(script), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    prof = hatchet.read(tmp_path / "forked.hatchet")
    assert find(prof, "parent", "add_kernel").metrics["count"] == 6
    assert "child" not in {n.name for n in prof.root.walk()}
    assert proc.stderr.count("deuteron: wrote") == 1 and "at exit" not in proc.stderr


def test_a_fork_pool_shuts_down_without_tracebacks(tmp_path: Path):
    script = _script(
        tmp_path,
        """
        import multiprocessing, time
        def work(i):
            time.sleep(30)
        if __name__ == "__main__":
            launch()
            pool = multiprocessing.get_context("fork").Pool(2)
            pool.map_async(work, range(2))
            time.sleep(0.5)
            pool.terminate()
            pool.join()
            print("pool done")
        """,
    )
    proc = run_cli("run", "-n", "pool", str(script), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "pool done" in proc.stdout
    assert "Traceback" not in proc.stderr and "Signalled" not in proc.stderr
    assert kernels(hatchet.read(tmp_path / "pool.hatchet"))["add_kernel"].metrics["count"] == 1


def test_two_runs_of_one_name_at_once(tmp_path: Path):
    script = _script(
        tmp_path, "import deuteron\nfor i in range(2000):\n    with deuteron.scope(f's{i}'): pass\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(REPO)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "deuteron", "run", "-n", "same", str(script)],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert "Traceback" not in err
    assert hatchet.read(tmp_path / "same.hatchet").node_count() == 2001
    _no_temporaries(tmp_path)


# --- depth ----------------------------------------------------------------------------------------


def test_ten_thousand_nested_scopes_are_written_and_viewed(tmp_path: Path):
    script = _script(
        tmp_path,
        """
        import deuteron
        for i in range(10000):
            deuteron.enter_scope(f"s{i}")
        launch()
        for i in reversed(range(10000)):
            deuteron.exit_scope(f"s{i}")
        """,
    )
    proc = run_cli("run", "-n", "deep", str(script), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    prof = hatchet.read(tmp_path / "deep.hatchet")
    assert prof.node_count() == 10002
    shown = run_cli("view", "deep.hatchet", "-m", "count", "-d", "5", cwd=tmp_path)
    assert shown.returncode == 0 and len(shown.stdout.splitlines()) == 6, shown.stderr  # header + 5 levels
    as_json = run_cli("view", "deep.hatchet", "-m", "count", "-d", "20000", "--json", cwd=tmp_path)
    assert as_json.returncode == 0, as_json.stderr
    from deuteron.formats import jsonio

    tree = jsonio.loads(as_json.stdout)["tree"]
    depth = 0
    while tree["children"]:
        tree, depth = tree["children"][0], depth + 1
    assert depth == 10001 and tree["name"] == "add_kernel" and tree["metrics"]["count"] == 1


def test_readme_example_still_runs(tmp_path: Path):
    proc = run_cli(
        "run", str(EXAMPLES / "vector_add.py"), "--n", "1000", "--size", "32", "--steps", "1", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    _no_temporaries(tmp_path)
