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
from tests.helpers.cli import run_cli
from tests.helpers.paths import EXAMPLES, PROTON_FIXTURES, REPO
from tests.helpers.profiles import find, kernels
from tests.helpers.sources import ADD_KERNEL_SOURCE

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


@pytest.mark.parametrize(
    "words",
    [
        ("-m", "mypkg.job"),
        ("-mmypkg.job",),
        ("-n", "deuteron", "-b", "interpreter", "-m", "mypkg.job"),
        ("--name=deuteron", "--", "mypkg/job.py"),
        ("mypkg/job.py",),
    ],
    ids=["module", "module-joined", "options-first", "double-dash", "script"],
)
def test_every_word_after_the_target_belongs_to_the_target(tmp_path: Path, words: tuple[str, ...]):
    """Words that look like Deuteron's options (``--name``, ``--n`` (a prefix of it), ``-m``,
    ``--trace``) reach the program untouched, however the target is named."""
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    _script(
        tmp_path / "mypkg",
        """
        json.dump({"argv": sys.argv[1:]}, open("seen.json", "w"))
        add()
    """,
        name="job.py",
    )
    own = ["--epochs", "1", "--n", "1000", "--name", "mine", "-m", "x", "--trace", "-h"]
    proc = run_cli("run", *words, *own, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "seen.json").read_text()) == {"argv": own}
    assert sorted(p.name for p in tmp_path.glob("*.hatchet")) == ["deuteron.hatchet"]
    assert not list(tmp_path.glob("*.chrome_trace"))  # the target's --trace is not ours


def test_a_script_with_its_own_session_under_run(tmp_path: Path):
    """The program's own start()/finalize() write its own file; its bare finalize() does not end
    the whole-program profile, which also gets the launches after it."""
    _script(
        tmp_path,
        """
        add()
        sid = deuteron.start("mine")
        with deuteron.scope("inside"):
            add()
        deuteron.deactivate(0)  # its own session, numbered as without deuteron run (tutorial 09 does this)
        add()
        deuteron.activate(0)
        deuteron.finalize()
        add()
        print("own session", sid)
    """,
    )
    proc = run_cli("run", "job.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("own session 0") and "no session" not in proc.stderr
    whole = hatchet.read(tmp_path / "deuteron.hatchet")
    mine = hatchet.read(tmp_path / "mine.hatchet")
    assert find(whole, "add_kernel").metrics["count"] == 3  # the run's session was never paused
    assert find(whole, "inside", "add_kernel").metrics["count"] == 1
    assert find(mine, "inside", "add_kernel").metrics["count"] == 1
    assert "add_kernel" not in {c.name for c in mine.root.children.values()}  # paused: not counted


def test_each_rank_writes_its_own_files_and_view_merges_them(tmp_path: Path):
    """Under torchrun every rank runs the same command in the same folder: each writes
    NAME.rank<R>.*; viewing them together gives each column's min, median and max over ranks."""
    _script(
        tmp_path,
        """
        rank = int(os.environ.get("RANK", os.environ.get("LOCAL_RANK", "0")))
        with deuteron.scope("step"):
            for _ in range(rank + 1):  # rank r launches r + 1 times
                add()
    """,
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "deuteron", "run", "--trace", "job.py"],
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(REPO), variable: str(r)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for r, variable in ((0, "RANK"), (1, "RANK"), (2, "LOCAL_RANK"))
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    names = sorted(p.name for p in tmp_path.iterdir() if p.suffix in (".hatchet", ".chrome_trace"))
    assert names == [f"deuteron.rank{r}.{f}" for r in range(3) for f in ("chrome_trace", "hatchet")]
    for r in range(3):
        profile = hatchet.read(tmp_path / f"deuteron.rank{r}.hatchet")
        assert find(profile, "step", "add_kernel").metrics["count"] == r + 1
        assert profile.metadata["rank"] == str(r)
    files = [f"deuteron.rank{r}.hatchet" for r in range(3)]
    proc = run_cli("view", *files, "-m", "count,bytes", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    header, *rows = proc.stdout.splitlines()
    assert header.split()[:6] == ["count", "(min)", "count", "(median)", "count", "(max)"]
    kernel_row = next(r for r in rows if r.endswith("add_kernel"))
    assert kernel_row.split()[:3] == ["1", "2", "3"]  # launches per rank: min, median, max, as integers
    assert kernel_row.split()[3:6] == ["3600", "7200", "10800"]  # 2 loads + 1 store of 300 fp32 a launch
    bad = run_cli("view", *files[:2], "--diff", "x.hatchet", cwd=tmp_path)
    _one_line_error(bad, "give one profile, not several")


@pytest.mark.slow
def test_no_stale_trace_is_left_beside_a_new_profile(tmp_path: Path):
    _script(tmp_path, "add()\n")
    assert run_cli("run", "--trace", "job.py", cwd=tmp_path).returncode == 0
    assert (tmp_path / "deuteron.chrome_trace").is_file()
    assert run_cli("run", "job.py", cwd=tmp_path).returncode == 0  # no --trace this time
    assert not (tmp_path / "deuteron.chrome_trace").exists()
    (tmp_path / "mine.chrome_trace").write_text('{"traceEvents": []}')  # not ours: left alone
    assert run_cli("run", "-n", "mine", "job.py", cwd=tmp_path).returncode == 0
    assert (tmp_path / "mine.chrome_trace").read_text() == '{"traceEvents": []}'


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


@pytest.mark.parametrize("variable", ["DEUTERON_DISABLE", "TRITON_PROTON_DISABLE"])
def test_disable_runs_the_script_without_a_profile(tmp_path: Path, variable: str):
    (tmp_path / "plain.py").write_text(
        "import sys, deuteron\nprint('hi', deuteron.start('own'))\ndeuteron.finalize()\nsys.exit(4)\n"
    )
    proc = run_cli("run", "plain.py", cwd=tmp_path, env={variable: "1"})
    assert proc.returncode == 4 and proc.stdout == "hi None\n"  # start() is a no-op, as in Proton
    assert not list(tmp_path.glob("*.hatchet"))
    assert variable in proc.stderr


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (("run", "missing.py"), ("script 'missing.py' does not exist",)),
        (("run", "-b", "gpu", "x.py"), ("invalid choice: 'gpu'",)),
        (("run", "-b", "cupti", "x.py"), ("cupti backend is unavailable", "--backend interpreter")),
        (("run", "-m", "no_such_module_here"), ("no module named 'no_such_module_here'",)),
        (("run", "-m", "no_such_pkg.job", "--epochs", "1"), ("no module named 'no_such_pkg'",)),
        (("check", "-m", "json.no_such_job"), ("no module named 'json.no_such_job'",)),
        (("explain", "-m", "no_such_pkg.job", "--n", "100"), ("no module named 'no_such_pkg'",)),
        (("run", "-m", "a,,b"), ("'a,,b' is not a module name",)),
        (("run", "--n", "5", "x.py"), ("unrecognized arguments: --n",)),  # never an abbreviation of --name
        (("check", "--fail", "error", "x.py"), ("unrecognized arguments: --fail",)),
        (("run",), ("nothing to run",)),
        (("run", "."), ("is a directory",)),
        (("view", "missing.hatchet"), ("missing.hatchet: no such file",)),
        (("view", "truncated.hatchet"), ("not valid JSON",)),
        (("view", "shape.hatchet"), ("not a hatchet profile",)),
        (("view", "good.hatchet", "-m", "nope"), ("unknown metric 'nope'", "--list-metrics")),
        (("view", "good.hatchet", "-m", "time/mss"), ("did you mean 'time/ms'?",)),
        (("view", "good.hatchet", "-m", "tmie"), ("did you mean 'time (ns)'?",)),
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
    shallow = run_cli("view", str(interp_profile), "-d", "2", cwd=cwd)  # 2 levels: ROOT and below it
    assert "vector_add" in shallow.stdout and "add_kernel" not in shallow.stdout
    sorted_ = run_cli("view", str(interp_profile), "-m", "bytes", "--sort", "-d", "2", cwd=cwd)
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
    both = json.loads(same.stdout)
    assert both["columns"] == ["bytes (old)", "bytes (new)", "bytes (ratio)", "bytes (change %)"]
    root = both["tree"]["metrics"]
    assert root["bytes (old)"] == root["bytes (new)"] > 0
    assert (root["bytes (ratio)"], root["bytes (change %)"]) == (1, 0)
    assert "warning" not in same.stderr


@pytest.mark.slow
def test_diff_shows_old_new_ratio_and_change_and_warns_on_other_contexts(tmp_path: Path):
    _script(tmp_path, "add()\nadd()\n", name="two.py")
    _script(tmp_path, "add()\nadd()\nadd()\n", name="three.py")
    for name, context in (("two", "shadow"), ("three", "shadow"), ("lines", "python")):
        script = "three.py" if name == "lines" else f"{name}.py"
        proc = run_cli("run", "-n", name, "-c", context, script, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
    proc = run_cli("diff", "two.hatchet", "three.hatchet", "-m", "count", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    header, *rows = proc.stdout.splitlines()
    assert header.split("  ")[:4] == ["count (old)", "count (new)", "count (ratio)", "count (change %)"]
    kernel = next(r for r in rows if r.endswith("add_kernel")).split()
    assert kernel[:4] == ["2", "3", "1.500", "+50.000"]
    mixed = run_cli("diff", "two.hatchet", "lines.hatchet", "-m", "count", cwd=tmp_path)
    assert mixed.returncode == 0, mixed.stderr
    assert mixed.stderr.count("\n") == 1 and "context 'shadow'" in mixed.stderr
    assert "with 'python'" in mixed.stderr and "[added]" in mixed.stdout


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


@pytest.mark.slow
def test_view_takes_proton_viewers_spellings(tmp_path: Path):
    """-l, -f, --print-sorted and -diff/--diff-profile, as proton-viewer spells them."""
    _script(tmp_path, "for _ in range(3):\n    add()\nadd()\n")
    assert run_cli("run", "-c", "python", "-n", "lines", "job.py", cwd=tmp_path).returncode == 0
    assert run_cli("run", "-n", "scopes", "job.py", cwd=tmp_path).returncode == 0
    listed = run_cli("view", "-l", "lines.hatchet", cwd=tmp_path)
    assert listed.returncode == 0 and "count  (inclusive)" in listed.stdout
    full = run_cli("view", "lines.hatchet", "-m", "count", cwd=tmp_path)
    short = run_cli(
        "view", "lines.hatchet", "-m", "count", "-f", "function_line", "--print-sorted", cwd=tmp_path
    )
    assert full.returncode == 0 and short.returncode == 0, short.stderr
    assert f"{tmp_path}/job.py:" in full.stdout  # frames are path/file.py:line@function
    tree, _, listing = short.stdout.partition("Sorted frames by count\n")
    assert str(tmp_path) not in tree and "@<module>" in tree and "@add" in tree
    values = [line.split()[-1] for line in listing.splitlines()]
    assert values[0] == "3" and values[-1] == "1"  # largest first: the loop's line, its helper, ...
    ours = run_cli("view", "scopes.hatchet", "--diff", "scopes.hatchet", "-m", "count", cwd=tmp_path)
    assert ours.returncode == 0 and "count (change %)" in ours.stdout, ours.stderr
    for spelling in ("-diff", "--diff-profile"):  # proton-viewer's: one signed difference per metric
        diff = run_cli("view", "scopes.hatchet", spelling, "scopes.hatchet", "-m", "count", cwd=tmp_path)
        assert diff.returncode == 0, diff.stderr
        assert diff.stdout.splitlines()[0].split() == ["count", "name"]
        assert diff.stdout.splitlines()[1].split()[0] == "0"
