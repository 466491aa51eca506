"""Every recorded profile and trace under tests/fixtures (Proton's included) and every recorded
CUPTI drain, replayed into a profile, checked against the rules of ``deuteron view --check``
(deuteron.view.doctor over deuteron.model.invariants and trace_invariants; issue 39)."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from deuteron.collect.backends.cupti import replay
from deuteron.collect.session import Session
from deuteron.formats import hatchet
from deuteron.view import doctor
from tests.helpers.paths import FIXTURES_DIR

SUFFIXES = (".hatchet", ".hatchet_msgpack", ".chrome_trace")

# Fixtures that break a rule, with how many violations and one of them as the report says it.
# They are not weakened: each is a record of how the files were before the rule they break.
BROKEN = {
    # `deuteron run -c torch` of tests/fixtures/broken/mlp.py with the code of before c3fc07b (see
    # its README): a module's cpu_time timed its forward only, its backward was filed under it as
    # a child; autograd's AddmmBackward0 is below its children too (see test_view_check.py).
    "broken/cpu_torch_before_rule.hatchet": (
        7,
        "spans: ROOT > Sequential > 0 (Linear): cpu_time (ns) 142,233,899 is below its children's "
        "295,383,000 (backward 154,022,241, aten::linear 141,360,759)",
    ),
    # The recorded two-rank jobs (2026-11-26, before c3fc07b): the same break in every module of
    # the Llama, and in the modules and scopes around them, which inherit it; in FSDP2's files also
    # FSDP::all_gather, whose children (the collective's op and NCCL's own scope) sum above it.
    "ranks/ddp/deuteron.rank0.hatchet.gz": (
        32,
        "spans: ROOT > DistributedDataParallel > DistributedDataParallel.forward > module "
        "(LlamaForCausalLM) > lm_head (Linear): cpu_time (ns) 3,633,192 is below its children's "
        "10,782,155 (backward 7,211,604, aten::linear 3,570,551)",
    ),
    "ranks/ddp/deuteron.rank1.hatchet.gz": (
        32,
        "spans: ROOT > DistributedDataParallel: cpu_time (ns) 416,357,945 is below its children's "
        "557,586,132 (DistributedDataParallel.forward 557,586,132)",
    ),
    "ranks/fsdp2/deuteron.rank0.hatchet.gz": (
        32,
        "spans: ROOT > FSDPLlamaForCausalLM > FSDP::pre_forward > FSDP::all_gather: cpu_time (ns) "
        "644,637,004 is below its children's 796,467,065 (c10d::_allgather_base_ 623,609,066, "
        "nccl:_all_gather_base 153,545,739, fsdp::all_gather_copy_in 19,060,595, and 1 more)",
    ),
    "ranks/fsdp2/deuteron.rank1.hatchet.gz": (
        32,
        "spans: ROOT > FSDPLlamaForCausalLM > lm_head (Linear): cpu_time (ns) 5,275,455 is below its "
        "children's 13,410,944 (backward 8,199,528, aten::linear 5,211,416)",
    ),
}


def _recorded() -> list[object]:
    """Each profile or trace under tests/fixtures (gzipped ones too). Their copies in a test's
    folder are skipped by the conftest hook (tests/helpers/written_files.py): they are judged here."""
    out: list[object] = []
    for path in sorted(FIXTURES_DIR.rglob("*")):
        name = path.name.removesuffix(".gz")
        if not path.is_file() or not (
            name.endswith(SUFFIXES) or (name.endswith(".json") and doctor.is_checkable(path))
        ):
            continue
        key = path.relative_to(FIXTURES_DIR).as_posix()
        out.append(pytest.param(key, id=key))
    return out


def _readable(key: str, folder: Path) -> Path:
    """The fixture as it was written (unzipped into ``folder`` when gzipped)."""
    path = FIXTURES_DIR / key
    if path.suffix != ".gz":
        return path
    out = folder / path.name.removesuffix(".gz")
    with gzip.open(path, "rb") as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


@pytest.mark.parametrize("key", _recorded())
def test_every_recorded_file_keeps_the_rules_or_breaks_them_as_recorded(key: str, tmp_path: Path) -> None:
    check = doctor.check_file(_readable(key, tmp_path))
    shown = [str(v) for v in check.audit.violations]
    if key in BROKEN:
        count, line = BROKEN[key]
        assert (len(shown), line in shown) == (count, True), shown
        assert {v.rule for v in check.audit.violations} == {"spans"}
    else:
        assert shown == []
    assert check.kind == ("trace" if "chrome_trace" in key else "profile")


def test_the_fixtures_checked_include_protons_and_the_recorded_ranks() -> None:
    keys = {p.values[0] for p in _recorded()}  # type: ignore[attr-defined]
    assert {"proton/proton_trace.chrome_trace", "proton/proton_shadow.hatchet"} <= keys
    assert "ranks/ddp/deuteron.rank0.chrome_trace.gz" in keys
    assert set(BROKEN) <= keys


CUPTI_RUNS = sorted(p.name for p in FIXTURES_DIR.glob("cupti_*") if (p / "drain000.json").is_file())
SAMPLED = {name for name in CUPTI_RUNS if (FIXTURES_DIR / name / "samples_000.json").is_file()}


@pytest.mark.parametrize("folder", CUPTI_RUNS)
def test_every_recorded_cupti_run_replays_into_a_profile_that_keeps_the_rules(
    folder: str, tmp_path: Path
) -> None:
    """Each recorded run filed with the context it was recorded with (named by its folder)."""
    context = folder.removeprefix("cupti_")
    context = context if context in ("torch", "python", "native", "jax") else "shadow"
    session = Session(0, "fixture", backend="interpreter", context=context)
    replay(FIXTURES_DIR / folder, session)
    path = hatchet.write(session.profile, tmp_path / f"{folder}.hatchet")  # the conftest hook checks it too
    check = doctor.check_file(path)
    assert [str(v) for v in check.audit.violations] == []
    rules = [str(r) for r in check.audit.rules]
    # the sampled run's kernels hold what its metadata says was sampled of each
    assert ("samples" if folder in SAMPLED else "samples n/a (not a sampled profile)") in rules


def test_the_recorded_cupti_runs_include_the_sampled_ones() -> None:
    assert {"cupti_sampling", "cupti_torch", "cupti_jax"} <= set(CUPTI_RUNS) and "cupti_sampling" in SAMPLED


def test_the_report_lists_twenty_violations_then_counts_the_rest(tmp_path: Path) -> None:
    check = doctor.check_file(_readable("ranks/ddp/deuteron.rank0.hatchet.gz", tmp_path))
    lines, ok = doctor.report([check])
    assert not ok
    assert lines[0].startswith(f"FAIL {tmp_path / 'deuteron.rank0.hatchet'}: ")
    assert "; 32 violations of spans; rules: numbers, spans, root n/a" in lines[0]
    assert len(lines) == 1 + 20 + 1 and lines[-1] == "  and 12 more"
    assert all(line.startswith("  spans: ROOT > ") for line in lines[1:-1])


def test_a_json_file_that_is_neither_a_profile_nor_a_trace_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / "report.json").write_text('{"format": "deuteron-check", "findings": []}')
    (tmp_path / "bare.json").write_text('[{"name": "a", "ph": "X", "ts": 0, "dur": 1}]')
    assert not doctor.is_checkable(tmp_path / "report.json")
    assert doctor.is_checkable(tmp_path / "bare.json")  # Chrome reads a bare list of events too
    assert doctor.check_file(tmp_path / "bare.json").kind == "trace"
