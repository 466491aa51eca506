"""The rules a profile keeps (deuteron.model.invariants): each broken on purpose and flagged, each
kept and passed, on trees written to hatchet files and read back as a user's would be; then a
property test over generated trees (issue 39)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deuteron.formats import hatchet
from deuteron.model.invariants import (
    COVERS,
    RANKS,
    ROOT_RULE,
    SAMPLES,
    SPANS,
    audit_job,
    audit_profile,
    check_profile,
    falls_short,
)
from deuteron.model.tree import KERNEL, Node, Profile
from deuteron.view import processors

CPU, TIME, CALLS = "cpu_time (ns)", "time (ns)", "calls"


def _round_trip(profile: Profile, tmp_path: Path, name: str = "p.hatchet") -> Profile:
    return hatchet.read(hatchet.write(profile, tmp_path / name))


def _cpu_profile(module_ns: int) -> Profile:
    """A -c torch tree: a module whose forward ran an op and whose backward is filed under it."""
    p = Profile()
    p.kinds.update({CPU: "exc", CALLS: "exc"})
    model = p.root.child("model (MLP)")
    p.add_metrics(model, {CPU: module_ns, CALLS: 4})
    p.add_metrics(model.child("aten::linear"), {CPU: 700, CALLS: 4, "flops": 2_000})
    backward = model.child("backward")
    p.add_metrics(backward, {CPU: 500})
    p.add_metrics(backward.child("AddmmBackward0"), {CPU: 480, CALLS: 4})
    return p


def _rules(profile: Profile) -> dict[str, str]:
    return {r.rule: str(r) for r in audit_profile(profile).rules}


# --- numbers --------------------------------------------------------------------------------------


@pytest.mark.broken_profile
def test_a_negative_summable_value_is_flagged_and_a_negative_property_is_not(tmp_path: Path) -> None:
    p = Profile()
    kernel = p.root.child("step").child("k", KERNEL)
    p.add_metrics(kernel, {TIME: 1_000, "bytes": -64, "count": 1, "device_id": "0"})
    p.add_metrics(p.root.child("step"), {"calls (exc)": -1})  # exclusive, not summed: not this rule
    violations = check_profile(_round_trip(p, tmp_path))
    assert [str(v) for v in violations] == ["numbers: ROOT > step > k: bytes is -64, below 0"]


def test_a_value_that_is_not_finite_is_flagged() -> None:
    p = Profile()  # a file cannot hold NaN (JSON has none): a tree made in memory can
    p.add_metrics(p.root.child("k", KERNEL), {TIME: math.nan, "flops": [1.0, math.inf]})
    assert sorted(str(v) for v in check_profile(p)) == [
        "numbers: ROOT > k: flops is inf, not finite",
        "numbers: ROOT > k: time (ns) is nan, not finite",
    ]


def test_a_diff_is_not_judged_by_the_numbers_rules(tmp_path: Path) -> None:
    old, new = _cpu_profile(2_000), _cpu_profile(1_000)
    shown = processors.diff(processors.inclusive(new), processors.inclusive(old))
    assert shown.metadata["diff_against"] == ""
    audit = audit_profile(shown)
    assert audit.violations == []
    assert str(audit.rules[0]) == "covers n/a (a diff: its values are changes)"


# --- spans and ROOT -------------------------------------------------------------------------------


@pytest.mark.broken_profile
def test_a_module_whose_cpu_time_is_below_its_backward_child_is_flagged(tmp_path: Path) -> None:
    """The tree of before c3fc07b: the module's span timed its forward only, the backward filed
    under it as a child."""
    violations = check_profile(_round_trip(_cpu_profile(1_000), tmp_path))
    assert [str(v) for v in violations] == [
        "spans: ROOT > model (MLP): cpu_time (ns) 1,000 is below its children's 1,200 "
        "(aten::linear 700, backward 500)"
    ]


def test_a_module_that_covers_its_children_passes(tmp_path: Path) -> None:
    p = _round_trip(_cpu_profile(1_200), tmp_path)
    assert check_profile(p) == []
    assert _rules(p)[SPANS] == "spans"
    assert _rules(p)[ROOT_RULE] == "root n/a (ROOT has no span value of its own)"


@pytest.mark.broken_profile
def test_a_break_is_named_once_not_at_every_frame_above_it(tmp_path: Path) -> None:
    p = _cpu_profile(1_200)
    model = p.root.children[("model (MLP)", "function")]
    model.children[("backward", "function")].metrics[CPU] = 400  # below its node's 480
    violations = check_profile(_round_trip(p, tmp_path))
    assert [v.where for v in violations] == ["ROOT > model (MLP) > backward"]  # 1,200 >= 700 + 480


def test_float_spans_get_a_relative_tolerance_and_integers_none() -> None:
    assert not falls_short(1.0, 1.0 + 1e-12)
    assert falls_short(1.0, 1.0 + 1e-6)
    assert falls_short(999, 1_000)
    assert not falls_short(1_000, 1_000)


@pytest.mark.broken_profile
def test_root_whose_own_span_is_below_its_children_is_flagged(tmp_path: Path) -> None:
    p = _cpu_profile(1_200)
    p.add_metrics(p.root, {CPU: 1_000})
    violations = check_profile(_round_trip(p, tmp_path))
    assert [str(v) for v in violations] == [
        "root: ROOT: cpu_time (ns) 1,000 is below its children's 1,200 (model (MLP) 1,200)"
    ]
    p.root.metrics[CPU] = 5_000
    assert check_profile(_round_trip(p, tmp_path, "ok.hatchet")) == []
    assert _rules(p)[ROOT_RULE] == "root"


def test_cpu_time_summed_as_inclusive_keeps_the_plain_rule(tmp_path: Path) -> None:
    p = _cpu_profile(1_000)
    p.kinds[CPU] = "inc"  # a file that sums cpu_time upward: own values below children are fine
    assert check_profile(_round_trip(p, tmp_path)) == []
    assert _rules(p)[SPANS] == "spans n/a (no span metric)"


# --- an inclusive tree ----------------------------------------------------------------------------


def test_an_inclusive_tree_covers_its_children_and_a_hand_broken_one_is_flagged() -> None:
    inc = processors.inclusive(_cpu_profile(1_000))
    assert audit_profile(inc).violations == []
    inc.root.children[("model (MLP)", "function")].metrics["flops"] = 10
    assert [str(v) for v in check_profile(inc)] == [
        "covers: ROOT > model (MLP): flops 10 is below its children's 2,000"
    ]
    assert str(audit_profile(inc).rules[0]) == COVERS


# --- samples --------------------------------------------------------------------------------------


def _sampled(line_samples: int, metadata: bool = True) -> Profile:
    """A kernel sampled at two lines (``file:line@kernel`` rows) and one without lines (its own
    samples), under two places; the metadata as ``--sample`` writes it."""
    p = Profile()
    for place in ("warmup", "steps"):
        k = p.root.child(place).child("gather_add", KERNEL)
        p.add_metrics(k, {TIME: 100, "count": 1})
        p.add_metrics(k.child("hot_line.py:30@gather_add"), {"num_samples": line_samples})
        p.add_metrics(k.child("hot_line.py:31@gather_add"), {"num_samples": 5})
    copy = p.root.child("steps").child("_ZN2at6native4copyE", KERNEL)
    p.add_metrics(copy, {TIME: 10, "count": 1, "num_samples": 7})
    if metadata:
        kernels = {
            "gather_add": {"crc": "b93b2e67", "samples": 2 * (10 + 5)},
            "_ZN2at6native4copyE": {"crc": "508a704a", "samples": 7, "lines_missing": "no cubin"},
        }
        p.metadata["pc_sampling"] = {"samples": 37, "drains": 1, "kernels": kernels}
    return p


def test_a_sampled_kernels_line_rows_add_up_to_what_was_sampled(tmp_path: Path) -> None:
    p = _round_trip(_sampled(10), tmp_path)
    assert check_profile(p) == []
    assert _rules(p)[SAMPLES] == "samples"


@pytest.mark.broken_profile
def test_line_rows_that_do_not_add_up_to_what_was_sampled_are_flagged(tmp_path: Path) -> None:
    p = _round_trip(_sampled(11), tmp_path)
    assert [str(v) for v in check_profile(p)] == [
        "samples: ROOT: num_samples 39 under the kernels, but the metadata says 37 were sampled",
        "samples: kernel gather_add (2 places): num_samples 32 in the tree (own and line rows), but "
        "the metadata says 30 were sampled",
    ]


def test_samples_without_recorded_totals_are_said_not_applicable() -> None:
    assert _rules(_sampled(10, metadata=False))[SAMPLES] == "samples n/a (no sampled totals in the metadata)"
    assert _rules(Profile())[SAMPLES] == "samples n/a (not a sampled profile)"


def test_a_kernel_of_two_cubins_leaves_only_the_total_to_check() -> None:
    p = _sampled(10)
    p.metadata["pc_sampling"]["kernels"]["gather_add"]["samples"] = 20  # type: ignore[index]
    assert check_profile(p) == []
    assert _rules(p)[SAMPLES] == "samples (the total only: the metadata's kernels hold 27 of 37)"


# --- ranks ----------------------------------------------------------------------------------------


def _rank(rank: int, job: str = "torchrun:vm:1:2", size: int = 2) -> Profile:
    p = _cpu_profile(1_200)
    p.metadata.update({"rank": str(rank), "world_size": str(size), "job_id": job, "launcher": "torchrun"})
    return p


def _job(tmp_path: Path, *profiles: Profile) -> list[str]:
    files = [(f"r{i}.hatchet", _round_trip(p, tmp_path, f"r{i}.hatchet")) for i, p in enumerate(profiles)]
    return [str(v) for v in audit_job(files).violations]


def test_the_ranks_of_one_job_pass(tmp_path: Path) -> None:
    assert _job(tmp_path, _rank(0), _rank(1)) == []
    assert str(audit_job([("a", _rank(0))]).rules[0]) == "ranks n/a (one file)"
    assert str(audit_job([("a", Profile()), ("b", Profile())]).rules[0]) == (
        "ranks n/a (no file says its job or rank)"
    )


def test_files_of_two_jobs_are_flagged(tmp_path: Path) -> None:
    assert _job(tmp_path, _rank(0), _rank(1, job="torchrun:vm:9:9")) == [
        "ranks: the files: job_id differs: r0.hatchet says torchrun:vm:1:2; r1.hatchet says torchrun:vm:9:9"
    ]


def test_a_rank_twice_or_missing_is_flagged(tmp_path: Path) -> None:
    assert _job(tmp_path, _rank(0, size=3), _rank(0, size=3)) == [
        "ranks: r0.hatchet and r1.hatchet: rank 0 twice",
        "ranks: the files: rank 1, 2 missing of the job's 3 (1 given)",
    ]
    assert _job(tmp_path, _rank(0), _rank(1, size=4)) == [
        "ranks: the files: world_size differs: r0.hatchet says 2; r1.hatchet says 4"
    ]
    assert RANKS == "ranks"


# --- a property over generated trees --------------------------------------------------------------

METRICS = {
    TIME: st.integers(0, 10**9),  # inclusive, whole
    "bytes": st.floats(0, 1e12, allow_nan=False),  # inclusive, fractional
    CPU: st.integers(0, 10**9),  # a span (exclusive kind)
    CALLS: st.integers(0, 1_000),  # exclusive, the frame's own
    "device_id": st.sampled_from(["0", "1"]),  # a property
}


@st.composite
def _trees(draw: st.DrawFn, obeying: bool) -> Profile:
    """A random tree with every kind of metric on random frames; ``obeying``: each span value at
    least its children's inclusive sum (a slack added), as a correct collector writes it."""
    p = Profile()
    p.kinds.update({CPU: "exc", CALLS: "exc", "device_id": "pty"})
    budget = [draw(st.integers(0, 25))]

    def grow(node: Node, depth: int) -> int | None:
        """Fill ``node``'s subtree; its inclusive span value (None: none below or at it)."""
        below: int | None = None
        width = draw(st.integers(0, 3)) if depth < 5 else 0
        for i in range(width):
            if budget[0] <= 0:
                break
            budget[0] -= 1
            child = node.child(f"f{depth}.{i}", draw(st.sampled_from(["function", KERNEL])))
            value = grow(child, depth + 1)
            below = below if value is None else (below or 0) + value
        metrics = draw(st.dictionaries(st.sampled_from(sorted(METRICS)), st.just(0)))
        own: int | None = None
        for name in metrics:
            value = draw(METRICS[name])
            if name == CPU and obeying:
                value = (below or 0) + draw(st.integers(0, 1_000))
            if name == CPU:
                own = value
            if node is not p.root or name != CPU:
                p.add_metrics(node, {name: value})
        if own is None or node is p.root:
            return below
        return own if below is None else max(own, below)

    grow(p.root, 0)
    return p


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_trees(obeying=False))
def test_any_tree_made_inclusive_covers_its_children(profile: Profile) -> None:
    inc = processors.inclusive(profile)
    assert audit_profile(inc).violations == []
    for node in inc.root.walk():  # the rule itself, for every summable metric, spelled out
        for name in (TIME, "bytes", CPU):
            kids = sum(float(c.metrics.get(name, 0)) for c in node.children.values())  # type: ignore[arg-type]
            if node.children and kids:
                assert float(node.metrics[name]) >= kids * (1 - 1e-9)  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_trees(obeying=True))
def test_a_tree_that_obeys_the_rules_has_no_violation(profile: Profile) -> None:
    assert check_profile(profile) == []
