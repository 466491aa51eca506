"""PC sampling without a GPU: a real drain replayed, checked against the raw rows it holds.

``tests/fixtures/cupti_sampling`` was recorded on an H200 (CUDA 13, triton 3.6, torch 2.11) by
``DEUTERON_CUPTI_RECORD=rec deuteron run --sample examples/hot_line.py``: one kernel drain, one
sample drain (every row CUPTI handed out) and the two Triton kernels' cubin and PTX. The tree's
numbers are compared with sums computed here straight from the rows, not with numbers copied
from a run."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from deuteron.collect.backends.cupti import replay
from deuteron.collect.backends.cupti.sampling import ROW, Drain, SampleConfig, interval_exponent, stall_column
from deuteron.collect.backends.port import BackendError
from deuteron.collect.modes import sampling_interval
from deuteron.collect.samples import UNFILED, SampleFiler, split_counts
from deuteron.collect.session import Session
from deuteron.explain.pc_lines import NO_LINE, LineTable, line_rows
from deuteron.formats import hatchet
from deuteron.model.intra import ScopeRow
from deuteron.model.tree import KERNEL, Node, Profile
from deuteron.view import advise
from deuteron.view.hot_lines import hot_lines, sampled_kernels
from tests.helpers.cli import run_cli
from tests.helpers.paths import FIXTURES_DIR, REPO

FIXTURE = FIXTURES_DIR / "cupti_sampling"
EXAMPLE = REPO / "examples" / "hot_line.py"


def _line_of(text: str) -> int:
    return next(i for i, line in enumerate(EXAMPLE.read_text().splitlines(), 1) if text in line)


def _replayed() -> Session:
    session = Session(0, "fixture", backend="interpreter", context="shadow")
    replay(FIXTURE, session)
    return session


def _child(node: Node, name: str) -> Node:
    return next(c for c in node.children.values() if c.name == name)


def _lines(kernel: Node) -> dict[int, Node]:
    return {int(c.name.rsplit(":", 1)[1].split("@")[0]): c for c in kernel.children.values() if "@" in c.name}


def _raw_samples() -> tuple[dict[str, int], int]:
    """Samples per kernel straight from the recorded rows (the reasons without ``_not_issued``)."""
    meta = json.loads((FIXTURE / "samples_000.json").read_text())
    rows = np.frombuffer((FIXTURE / "samples_000.bin").read_bytes(), ROW)
    reasons = dict(meta["reasons"])
    per_kernel: Counter[str] = Counter()
    for name, stall, n in zip(rows["name"], rows["stall"], rows["samples"], strict=True):
        if not reasons[int(stall)].endswith("_not_issued"):
            per_kernel[meta["names"][int(name)]] += int(n)
    return dict(per_kernel), int(sum(per_kernel.values()))


def test_replayed_samples_add_up_to_the_rows_and_land_under_their_kernels() -> None:
    session = _replayed()
    root = session.profile.root
    per_kernel, total = _raw_samples()
    in_tree = sum(int(n.metrics.get("num_samples", 0)) for n in root.walk())  # type: ignore[call-overload]
    assert in_tree == total > 100_000
    rms = sum(
        int(n.metrics.get("num_samples", 0))  # type: ignore[call-overload]
        for k in (_child(_child(root, "warmup"), "rms_scale"), _child(_child(root, "steps"), "rms_scale"))
        for n in k.walk()
    )
    assert rms == per_kernel["rms_scale"]
    assert UNFILED not in {c.name for c in root.children.values()}


def test_each_kernels_hot_line_and_stall() -> None:
    root = _replayed().profile.root
    steps = _lines(_child(_child(root, "steps"), "rms_scale"))
    sqrt_line = _line_of("tl.sqrt(x * x + 1.0)")
    assert max(steps, key=lambda n: steps[n].metrics["num_samples"]) == sqrt_line  # type: ignore[arg-type,return-value]
    top = steps[sqrt_line].metrics
    stalls = {k: v for k, v in top.items() if k.startswith("stalled_")}
    assert max(stalls, key=lambda k: stalls[k]) == "stalled_mio_throttle"  # type: ignore[arg-type,return-value]
    assert 0 < top["num_stalled_samples"] <= top["num_samples"]  # type: ignore[operator]
    gather = _lines(_child(_child(root, "steps"), "gather_add"))
    store = _line_of("tl.store(y_ptr + offs, x + 1.0")  # the first use of the gathered value waits
    worst = max(gather, key=lambda n: gather[n].metrics["num_samples"])  # type: ignore[arg-type,return-value]
    assert worst == store
    g = gather[store].metrics
    assert g["stalled_long_scoreboard"] > g["num_samples"] / 2  # type: ignore[operator]
    # its few PCs without a location (PTX line 0) sit in a basic block with located ones
    assert NO_LINE not in {c.name for c in _child(_child(root, "steps"), "gather_add").children.values()}


def test_a_kernel_run_from_two_places_is_shared_by_gpu_time() -> None:
    root = _replayed().profile.root
    warm, steps = (_child(_child(root, scope), "rms_scale") for scope in ("warmup", "steps"))

    def samples(kernel: Node) -> int:
        return sum(int(n.metrics.get("num_samples", 0)) for n in kernel.walk())  # type: ignore[call-overload]

    ratio = samples(steps) / samples(warm)
    time_ratio = int(steps.metrics["time (ns)"]) / int(warm.metrics["time (ns)"])  # type: ignore[call-overload]
    assert ratio == pytest.approx(time_ratio, rel=0.01)  # shares follow time exactly, to rounding
    assert 6 < ratio < 12  # nine launches against one (the first one is slower: cold caches)


def test_kernels_without_lines_keep_samples_on_their_node_and_say_why() -> None:
    session = _replayed()
    meta = session.profile.metadata["pc_sampling"]
    assert isinstance(meta, dict)
    assert meta["interval_cycles"] == 1024 and meta["asked_interval"] == 1000
    rms = meta["kernels"]["rms_scale"]
    assert "lines_missing" not in rms and rms["pc_line"][0] == _line_of("tl.sqrt(x * x + 1.0)")
    assert len(rms["pc"]) == len(rms["pc_samples"]) == len(rms["pc_stall"])
    torch_kernels = [k for k in meta["kernels"] if k.startswith("_ZN")]
    assert torch_kernels and all("cubin" in meta["kernels"][k]["lines_missing"] for k in torch_kernels)
    fill = next(
        n
        for n in session.profile.root.walk()
        if n.type == KERNEL and n.name.startswith("_ZN2at6native24index")
    )
    assert fill.metrics["num_samples"] > 0 and not fill.children


def test_advise_names_hot_lines_with_evidence_and_a_change(tmp_path: Path) -> None:
    profile = _replayed().profile
    found = [f for f in advise.advise(profile) if f.kind == "lines"]
    assert [f.title.split(":")[0] for f in found] == ["gather_add", "rms_scale"]
    gather = found[0]
    assert "long_scoreboard" in gather.title and "indexed gather" in gather.title
    assert gather.evidence[0]["path"] == f"hot_line.py:{_line_of('tl.store(y_ptr + offs, x + 1.0')}"
    path = hatchet.write(profile, tmp_path / "sampled.hatchet")
    proc = run_cli("view", str(path), "--advise", "-m", "num_samples", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "[lines] gather_add" in proc.stdout and "mio_throttle" in proc.stdout


def test_thin_evidence_gives_no_advice() -> None:
    profile = Profile()
    kernel = profile.root.child("k", KERNEL)
    profile.add_metrics(kernel.child("/a/k.py:3@k"), {"num_samples": 900, "stalled_long_scoreboard": 900})
    assert sampled_kernels(profile)["k"].samples == 900
    assert hot_lines(profile)[0] == []  # under MIN_SAMPLES: too thin
    profile.add_metrics(kernel.child("/a/k.py:3@k"), {"num_samples": 900, "stalled_wait": 200})
    kernels, total = hot_lines(profile)
    assert total == 1800 and kernels[0][1][0].stall == "stalled_long_scoreboard"


def test_a_lines_inlined_callees_count_on_the_line() -> None:
    """Samples filed below a line (``tl.sum (standard.py:314)``, inlined into it) are the line's."""
    profile = Profile()
    line = profile.root.child("k", KERNEL).child("/a/k.py:21@k")
    profile.add_metrics(line, {"num_samples": 350, "stalled_wait": 350})
    callee = line.child("tl.sum (standard.py:314)")
    profile.add_metrics(callee, {"num_samples": 600, "stalled_long_scoreboard": 600})
    profile.add_metrics(callee.child("_sum_combine (standard.py:287)"), {"num_samples": 50})
    kernel = sampled_kernels(profile)["k"]
    assert kernel.samples == 1000
    assert kernel.lines[("/a/k.py", 21)].samples == 1000
    assert set(kernel.lines) == {("/a/k.py", 21)}  # the callees are not lines of their own
    kernels, _total = hot_lines(profile)
    assert kernels[0][1][0].stall == "stalled_long_scoreboard"


@pytest.mark.slow
def test_explain_joins_a_sampled_profile_to_its_kernels(tmp_path: Path) -> None:
    hatchet.write(_replayed().profile, tmp_path / "sampled.hatchet")
    proc = run_cli(
        "explain",
        "--profile",
        "sampled.hatchet",
        "--json",
        "out.json",
        str(EXAMPLE),
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads((tmp_path / "out.json").read_text())
    kernels = {k["name"]: k for k in doc["kernels"]}
    hot = kernels["rms_scale"]["hot_lines"][0]
    assert hot["line"] == _line_of("tl.sqrt(x * x + 1.0)") and hot["stall"] == "stalled_mio_throttle"
    assert hot["samples"] > 100_000 and hot["change"]


def test_split_counts_are_whole_and_add_up() -> None:
    assert split_counts(10, [1, 1, 1]) == [4, 3, 3]
    assert split_counts(7, [0, 0]) == [4, 3]
    assert split_counts(100, [9, 1]) == [90, 10]
    assert sum(split_counts(12345, [3, 5, 7, 11])) == 12345


def test_samples_of_a_kernel_no_node_ran_are_kept_apart() -> None:
    profile = Profile()
    SampleFiler().file(profile, {"k": [ScopeRow(("/x.py:1@k",), {"num_samples": 5})]})
    node = _child(_child(_child(profile.root, UNFILED), "k"), "/x.py:1@k")
    assert node.metrics["num_samples"] == 5


def test_stall_columns_and_intervals() -> None:
    assert (
        stall_column("smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued")
        == "stalled_long_scoreboard"
    )
    assert stall_column("smsp__pcsamp_warps_issue_stalled_no_instructions") == "stalled_no_instruction"
    assert stall_column("smsp__pcsamp_sample_count") is None
    assert (interval_exponent(1000), interval_exponent(1), interval_exponent(1 << 40)) == (10, 5, 31)
    assert SampleConfig(3000).cycles == 2048
    assert sampling_interval("pcsampling:interval=4096") == 4096
    assert sampling_interval("default") is None
    with pytest.raises(ValueError, match="takes interval=N"):
        sampling_interval("pcsampling:foo=1")
    with pytest.raises(ValueError, match="positive"):
        sampling_interval("pcsampling:interval=0")


def test_damaged_drains_are_refused_in_one_line() -> None:
    with pytest.raises(BackendError, match="not a whole number of rows"):
        Drain(b"\x00" * 41, [], [], {}).kernels()
    row = np.zeros(1, ROW)
    row["name"] = 3
    with pytest.raises(BackendError, match="does not list"):
        Drain(row.tobytes(), ["k"], [], {}).kernels()


def test_a_kernel_without_a_cubin_gets_one_row_on_itself() -> None:
    table = LineTable.build(None, None)
    assert table.why and "cubin" in table.why
    rows = line_rows("k", np.array([16, 32]), {"num_samples": np.array([2, 3])}, table)
    assert rows == [ScopeRow((), {"num_samples": 5})]


def test_sample_flags_fail_in_one_line_without_a_gpu(tmp_path: Path) -> None:
    script = tmp_path / "s.py"
    script.write_text("print('ran')\n")
    for args, text in (
        (["--interval", "64"], "add --sample"),
        (["--sample", "-b", "interpreter"], "runs on the cupti backend"),
        (["--sample", "--mode", "default"], "drop --mode"),
        (["--sample", "--interval", "-3"], "must be positive"),
    ):
        proc = run_cli("run", *args, str(script), cwd=tmp_path)
        assert proc.returncode == 2 and text in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
        assert "ran" not in proc.stdout


def test_dropped_samples_are_said_with_what_to_do() -> None:
    from deuteron.collect.backends.cupti.sampled_lines import SampleCollector

    collector = SampleCollector(SampleConfig(1024))
    collector.rows(Drain(b"", [], [], {"dropped_samples": 0}))
    assert collector.lost() is None
    collector.rows(Drain(b"", [], [], {"dropped_samples": 1234, "hardware_buffer_full": 1}))
    said = collector.lost()
    assert said is not None and "1,234 PC samples" in said and "--interval 4096" in said


class _FailingSampler:
    """A sampler whose drains fail as CUPTI's did once at a short interval on a busy GPU."""

    def drain(self, final: bool) -> Drain:
        raise BackendError("cuptiPCSamplingDisable failed: CUPTI_ERROR_UNKNOWN")


def test_a_failed_last_drain_keeps_what_came_before_and_the_file_says_why() -> None:
    from deuteron.collect.backends.cupti.sampled_lines import SampleCollector

    collector = SampleCollector(SampleConfig(1024))
    collector.rows(Drain(b"", [], [], {"dropped_samples": 0}))  # an earlier drain that worked
    collector.sampler = _FailingSampler()  # type: ignore[assignment]
    with pytest.raises(BackendError):  # a periodic drain's failure stops the run, as before
        collector.collect(final=False)
    with pytest.warns(UserWarning, match="no PC samples after the last drain"):
        assert collector.collect(final=True) == {}
    meta = collector.metadata()
    assert meta["error"] == "cuptiPCSamplingDisable failed: CUPTI_ERROR_UNKNOWN" and meta["drains"] == 1


def test_the_sampled_device_follows_the_rank_within_the_visible_devices(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from deuteron.collect.backends.cupti.sampling import sampling_device

    monkeypatch.delenv("DEUTERON_SAMPLE_DEVICE", raising=False)
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert sampling_device(8) == 3
    assert sampling_device(1) == 0  # CUDA_VISIBLE_DEVICES gave this rank one GPU
    monkeypatch.setenv("DEUTERON_SAMPLE_DEVICE", "1")
    assert sampling_device(2) == 1
