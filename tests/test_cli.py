"""The command line end to end, each call in a fresh process as a user would run it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from deuteron.formats import chrome_trace, hatchet
from tests.conftest import EXAMPLES, PROTON_FIXTURES, REPO, run_cli
from tests.helpers import ADD_KERNEL_SOURCE, find, kernels

KERNEL_SCRIPT = ADD_KERNEL_SOURCE + """
import sys, json, time, os
import deuteron

def add(n=300):
    x, y = torch.rand(n), torch.rand(n)
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(n, 128),)](x, y, out, n, BLOCK=128)
    assert torch.allclose(out, x + y)
"""


def _script(tmp_path: Path, body: str, name: str = "job.py") -> Path:
    path = tmp_path / name
    path.write_text(KERNEL_SCRIPT + textwrap.dedent(body))
    return path


def _one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("deuteron: error: ")
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_readme_example_runs_and_views(tmp_path: Path):
    proc = run_cli(
        "run", str(EXAMPLES / "vector_add.py"), "--n", "3000", "--size", "32", "--steps", "2", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert "ok: vector add" in proc.stdout
    assert "deuteron: wrote deuteron.hatchet" in proc.stderr
    prof = hatchet.read(tmp_path / "deuteron.hatchet")
    assert find(prof, "vector_add", "add_kernel").metrics["bytes"] == 2 * 3 * 4 * 3000
    assert find(prof, "matmul", "matmul_kernel").metrics["flops"] == 2 * 2 * 32**3
    view = run_cli("view", "deuteron.hatchet", "-m", "time/ms,gbyte/s,tflop/s", cwd=tmp_path)
    assert view.returncode == 0, view.stderr
    header = view.stdout.splitlines()[0].split()
    assert header == ["time/ms", "gbyte/s", "tflop/s", "name"]
    assert "add_kernel" in view.stdout and "matmul_kernel" in view.stdout


def test_script_sees_its_argv_name_and_exit_code(tmp_path: Path):
    script = _script(
        tmp_path,
        """
        json.dump({"argv": sys.argv, "name": __name__}, open("seen.json", "w"))
        add()
        sys.exit(3)
    """,
    )
    proc = run_cli("run", "-n", "out", str(script), "--flag", "x y", cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen == {"argv": [str(script), "--flag", "x y"], "name": "__main__"}
    assert kernels(hatchet.read(tmp_path / "out.hatchet"))["add_kernel"].metrics["count"] == 1


def test_profile_is_written_when_the_script_raises(tmp_path: Path):
    script = _script(
        tmp_path,
        """
        with deuteron.scope("before_crash"):
            add()
        raise ValueError("boom")
    """,
    )
    proc = run_cli("run", str(script), cwd=tmp_path)
    assert proc.returncode == 1
    assert "ValueError: boom" in proc.stderr
    assert "job.py" in proc.stderr and "deuteron/cli" not in proc.stderr  # the user's traceback, not ours
    assert "partial profile" in proc.stderr
    assert (
        find(hatchet.read(tmp_path / "deuteron.hatchet"), "before_crash", "add_kernel").metrics["count"] == 1
    )


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_profile_is_written_on_signals(tmp_path: Path, signum: int):
    script = _script(
        tmp_path,
        """
        with deuteron.scope("work"):
            add()
        open("ready", "w").close()
        time.sleep(60)
    """,
    )
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.Popen(
        [sys.executable, "-m", "deuteron", "run", str(script)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 90
    while not (tmp_path / "ready").exists():
        assert proc.poll() is None, proc.communicate()
        assert time.time() < deadline
        time.sleep(0.1)
    proc.send_signal(signum)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, err
    assert signal.Signals(signum).name in err and "partial profile" in err
    assert find(hatchet.read(tmp_path / "deuteron.hatchet"), "work", "add_kernel").metrics["count"] == 1


def test_module_target(tmp_path: Path):
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    _script(
        tmp_path / "mypkg",
        """
        json.dump({"argv": sys.argv[1:], "name": __name__}, open("seen.json", "w"))
        add()
    """,
        name="job.py",
    )
    proc = run_cli("run", "-m", "mypkg.job", "a", "--b", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "seen.json").read_text()) == {"argv": ["a", "--b"], "name": "__main__"}
    assert "add_kernel" in kernels(hatchet.read(tmp_path / "deuteron.hatchet"))


def test_pytest_target_with_trace_and_hook(tmp_path: Path):
    _script(
        tmp_path,
        """
        def test_add():
            with deuteron.scope("in_test"):
                add()
    """,
        name="test_job.py",
    )
    proc = run_cli(
        "run",
        "--trace",
        "-k",
        "triton",
        "-c",
        "shadow",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "test_job.py",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout
    assert "in_test" in [n.name for n in hatchet.read(tmp_path / "deuteron.hatchet").root.walk()]
    events = chrome_trace.read(tmp_path / "deuteron.chrome_trace")
    kinds = {(e.category, e.name) for e in events}
    assert ("scope", "in_test") in kinds and ("kernel", "add_kernel") in kinds
    kernel_event = next(e for e in events if e.name == "add_kernel")
    scope_event = next(e for e in events if e.name == "in_test")
    assert scope_event.start_ns <= kernel_event.start_ns <= kernel_event.end_ns <= scope_event.end_ns
    assert kernel_event.call_stack[-2:] == ("in_test", "add_kernel")
    assert kernel_event.args["bytes"] == 300 * 12


def test_failing_pytest_target_keeps_its_exit_code(tmp_path: Path):
    (tmp_path / "test_fail.py").write_text("def test_no():\n    assert False\n")
    proc = run_cli("run", "pytest", "-q", "-p", "no:cacheprovider", "test_fail.py", cwd=tmp_path)
    assert proc.returncode == 1
    assert (tmp_path / "deuteron.hatchet").exists()


def test_non_triton_script_runs_and_writes_an_empty_profile(tmp_path: Path):
    (tmp_path / "plain.py").write_text("print('hello')\n")
    proc = run_cli("run", "plain.py", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == "hello\n"
    assert hatchet.read(tmp_path / "deuteron.hatchet").node_count() == 1


def test_disable_runs_the_script_without_a_profile(tmp_path: Path):
    (tmp_path / "plain.py").write_text("import sys\nprint('hi')\nsys.exit(4)\n")
    proc = run_cli("run", "plain.py", cwd=tmp_path, env={"DEUTERON_DISABLE": "1"})
    assert proc.returncode == 4 and proc.stdout == "hi\n"
    assert not (tmp_path / "deuteron.hatchet").exists()
    assert "DEUTERON_DISABLE" in proc.stderr


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (("run", "missing.py"), ("script 'missing.py' does not exist",)),
        (("run", "-b", "gpu", "x.py"), ("invalid choice: 'gpu'",)),
        (("run", "-b", "cupti", "x.py"), ("cupti backend is unavailable", "--backend interpreter")),
        (("run", "-m", "no_such_module_here"), ("no module named 'no_such_module_here'",)),
        (("run",), ("nothing to run",)),
        (("run", "."), ("is a directory",)),
        (("view", "missing.hatchet"), ("missing.hatchet: no such file",)),
        (("view", "truncated.hatchet"), ("not valid JSON",)),
        (("view", "shape.hatchet"), ("not a hatchet profile",)),
        (("view", "good.hatchet", "-m", "nope"), ("unknown metric 'nope'", "--list-metrics")),
        (("view", "good.hatchet", "-m", "util"), ("needs a device", "--device")),
        (("view", "good.hatchet", "--device", "tpu", "-m", "util"), ("unknown device 'tpu'",)),
        (("view", "good.hatchet", "-i", "("), ("missing ),",)),
        (("view", "good.hatchet", "-d", "-1"), ("depth must be 0 or more",)),
        (("view", "good.hatchet", "-i", "a", "-e", "b"), ("not allowed with argument",)),
        (("frobnicate",), ("invalid choice: 'frobnicate'",)),
    ],
)
def test_bad_input_is_one_clear_line_and_exit_2(
    tmp_path: Path, args: tuple[str, ...], needles: tuple[str, ...]
):
    (tmp_path / "x.py").write_text("print('should not run')\n")
    (tmp_path / "truncated.hatchet").write_text('[{"frame": {"name": "ROOT"')
    (tmp_path / "shape.hatchet").write_text('{"a": 1}')
    (tmp_path / "good.hatchet").write_text(
        '[{"frame": {"name": "ROOT", "type": "function"}, "metrics": {"time (ns)": 5}, "children": []}, {}]'
    )
    proc = run_cli(*args, cwd=tmp_path)
    _one_line_error(proc, *needles)
    assert "should not run" not in proc.stdout


def test_no_arguments_prints_help_and_exits_2(tmp_path: Path):
    proc = run_cli(cwd=tmp_path)
    assert proc.returncode == 2 and "usage: deuteron" in proc.stderr
    version = run_cli("--version", cwd=tmp_path)
    assert version.returncode == 0 and version.stdout.startswith("deuteron ")


@pytest.fixture(scope="module")
def interp_profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("interp")
    proc = run_cli(
        "run", str(EXAMPLES / "vector_add.py"), "--n", "2048", "--size", "32", "--steps", "1", cwd=where
    )
    assert proc.returncode == 0, proc.stderr
    return where / "deuteron.hatchet"


def test_view_options(interp_profile: Path):
    cwd = interp_profile.parent
    listed = run_cli("view", str(interp_profile), "--list-metrics", cwd=cwd)
    assert listed.returncode == 0 and "bytes  (inclusive)" in listed.stdout and "--device" in listed.stdout
    only = run_cli("view", str(interp_profile), "-m", "bytes", "-i", "matmul", cwd=cwd)
    assert "matmul_kernel" in only.stdout and "add_kernel" not in only.stdout
    dropped = run_cli("view", str(interp_profile), "-e", "matmul", cwd=cwd)
    assert "matmul" not in dropped.stdout and "add_kernel" in dropped.stdout
    shallow = run_cli("view", str(interp_profile), "-d", "1", cwd=cwd)
    assert "vector_add" in shallow.stdout and "add_kernel" not in shallow.stdout
    sorted_ = run_cli("view", str(interp_profile), "-m", "bytes", "--sort", "-d", "1", cwd=cwd)
    names = [line.split()[-1] for line in sorted_.stdout.splitlines()[2:]]
    assert names == ["vector_add", "matmul"]  # 24 KB beats 16 KB
    cut = run_cli("view", str(interp_profile), "-m", "bytes", "-t", "20000", cwd=cwd)
    assert "vector_add" in cut.stdout and "matmul" not in cut.stdout
    roof = run_cli("view", str(interp_profile), "-m", "roofline_time/ns,util", "--device", "h200", cwd=cwd)
    assert roof.returncode == 0, roof.stderr
    line = next(ln for ln in roof.stdout.splitlines() if ln.endswith("add_kernel"))
    assert float(line.split()[0]) == pytest.approx(2048 * 12 / (2 * 6016 * 3201000 * 1e3 / 8) * 1e9, rel=1e-3)


def test_view_json_and_diff_across_different_metric_sets(interp_profile: Path):
    cwd = interp_profile.parent
    js = run_cli("view", str(interp_profile), "--json", "-m", "time/ms,bytes", cwd=cwd)
    assert js.returncode == 0, js.stderr
    data = json.loads(js.stdout)
    assert data["columns"] == ["time/ms", "bytes"] and data["tree"]["name"] == "ROOT"
    assert data["metadata"]["backend"] == "interpreter"
    # an interpreter profile against Proton's GPU profile: different frames and metric sets
    diff = run_cli(
        "view",
        str(interp_profile),
        "--diff",
        str(PROTON_FIXTURES / "proton_shadow.hatchet"),
        "-m",
        "time/ms,bytes,count",
        cwd=cwd,
    )
    assert diff.returncode == 0, diff.stderr
    assert "[removed]" in diff.stdout and "[added]" in diff.stdout
    same = run_cli("diff", str(interp_profile), str(interp_profile), "-m", "bytes", "--json", cwd=cwd)
    assert same.returncode == 0, same.stderr
    assert json.loads(same.stdout)["tree"]["metrics"]["bytes"] == 0


def test_view_reads_protons_files(proton_fixtures: Path, tmp_path: Path):
    for name in ("proton_shadow.hatchet", "proton_python.hatchet", "proton_shadow_hook.hatchet"):
        proc = run_cli("view", str(proton_fixtures / name), "-m", "time/ms,util,avg_time/us", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert "add_kernel" in proc.stdout


def test_unfinalized_session_is_written_at_exit(tmp_path: Path):
    script = _script(
        tmp_path,
        """
        deuteron.start("forgot", backend="interpreter")
        with deuteron.scope("s"):
            add()
    """,
    )
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(REPO)},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "was not finalized; wrote forgot.hatchet at exit" in proc.stderr
    assert find(hatchet.read(tmp_path / "forgot.hatchet"), "s", "add_kernel").metrics["count"] == 1
