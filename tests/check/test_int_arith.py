"""Integer overflow and division by zero (issue 42): on the launch that runs (int32 ops that really
wrap, ``//`` by a zero argument) and, with ``--at-size``/``--scale``, at sizes too large to run
(tests/check_corpus/int_arith.py), each with its witness: program, lane, operands, arguments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import deuteron
from deuteron.check.at_size import AtSize, corners, parse_scale, parse_sizes, parse_value
from deuteron.check.errors import CheckError
from deuteron.check.findings import Findings
from deuteron.model.finding import Finding
from tests.check_corpus import int_arith
from tests.helpers.cli import run_cli
from tests.helpers.paths import REPO

CORPUS = "tests/check_corpus/int_arith.py"


def line_of(text: str) -> int:
    lines = Path(int_arith.__file__).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line and "# BUG:" in line)


def run_check(tmp_path: Path, *words: str) -> tuple[int, list[dict], str]:
    out = tmp_path / "findings.json"
    done = run_cli("check", "--no-color", "--json", str(out), *words, cwd=REPO)
    data = json.loads(out.read_text()) if out.exists() else {"findings": []}
    return done.returncode, data["findings"], done.stderr


def checked(fn, **options):  # type: ignore[no-untyped-def]
    with deuteron.check(raise_on=None, **options) as check:
        fn()
    return check.report


def only(findings: list[Finding], kind: str) -> Finding:
    hits = [f for f in findings if f.kind == kind]
    assert len(hits) == 1 and len(findings) == 1, [(f.kind, f.line, f.message) for f in findings]
    return hits[0]


# --- layer 2: sizes too large to run --------------------------------------------------------------


def test_int32_offsets_wrap_at_a_size_too_large_to_run(tmp_path: Path) -> None:
    code, findings, err = run_check(tmp_path, "--at-size", "n_elements=3e9", CORPUS, "add32")
    assert code == 1, err
    [f] = findings
    assert (f["kind"], f["line"]) == ("int-overflow", line_of("offs = pid * BLOCK")), f
    # BLOCK=256: program 8,388,608 is the first whose pid * BLOCK (2**31) leaves int32
    assert f["program"] == [8_388_608, 0, 0]
    d = f["details"]
    assert (d["op"], d["lane"], d["lhs"], d["rhs"], d["true"]) == ("*", [0], 8_388_608, 256, 2**31)
    assert d["wrapped"] == -(2**31) and d["at_size"] == {"n_elements": 3_000_000_000}
    assert d["arguments"]["BLOCK"] == 256
    assert "n_elements ≥ 2,147,483,649" in f["message"]  # 2**31 + 1: one program more than 2**31 needs
    assert "Traceback" not in err


def test_the_int64_twin_is_clean_at_that_size(tmp_path: Path) -> None:
    code, findings, err = run_check(tmp_path, "--at-size", "n_elements=3e9", CORPUS, "add64")
    assert (code, findings) == (0, []), err


def test_a_tuple_grid_is_rescaled_with_the_size() -> None:
    report = checked(int_arith.add32_tuple_grid, at_size={"n_elements": 3 * 10**9})
    f = only(report.findings, "int-overflow")
    assert f.program == (8_388_608, 0, 0) and f.details["grid"] == [11_718_750, 1, 1]


def test_row_times_stride_wraps_under_scale_and_names_the_first_row() -> None:
    report = checked(int_arith.rows, scale=10**6)
    f = only(report.findings, "int-overflow")
    assert f.line == line_of("base = row * stride")
    assert f.program == (22, 0, 0)  # 22 * 100,000,000 is the first row offset past 2**31
    assert "×" in f.details["since"]


# --- layer 1: the launch that runs -----------------------------------------------------------------


def test_a_real_wrap_is_found_with_its_program_lane_and_operands() -> None:
    report = checked(int_arith.scale)
    f = only(report.findings, "int-overflow")
    assert f.program == (0, 0, 0)
    d = f.details
    assert (d["lane"], d["lhs"], d["rhs"], d["true"]) == ([10], 70_000, 40_000, 2_800_000_000)
    assert d["arguments"]["factor"] == 40_000
    assert f.programs == 3  # every program wraps somewhere


def test_division_by_a_zero_argument_is_found_with_its_witness(tmp_path: Path) -> None:
    code, findings, err = run_check(tmp_path, CORPUS, "groups")
    assert code == 1, err
    [f] = findings
    assert (f["kind"], f["line"], f["program"]) == ("div-by-zero", line_of("offs // group"), [0, 0, 0])
    assert f["details"]["arguments"]["group"] == 0 and f["details"]["lane"] == [0]
    assert "RuntimeWarning" not in err


def test_no_bug_no_finding(tmp_path: Path) -> None:
    code, findings, err = run_check(tmp_path, CORPUS, "clean")
    assert (code, findings) == (0, []), err


# --- bad input --------------------------------------------------------------------------------------


@pytest.mark.parametrize("words", [["--at-size", "foo"], ["--scale", "0.5"]])
def test_bad_input_is_one_line(tmp_path: Path, words: list[str]) -> None:
    done = run_cli("check", *words, CORPUS, "clean", cwd=REPO)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stderr.startswith("deuteron: error: --")


@pytest.mark.parametrize(
    "text, value",
    [
        ("3e9", 3_000_000_000),
        ("3_000_000_000", 3_000_000_000),
        ("2**31", 2**31),
        ("2^31", 2**31),
        ("4G", 4 * 10**9),
        ("2Gi", 2**31),
    ],
)
def test_size_values(text: str, value: int) -> None:
    assert parse_value(text, "x") == value


@pytest.mark.parametrize("spec", ["foo", "n=", "n=abc", "n=1.5", "n=0", "n=-3", "=5", "1n=5", "n=2**100"])
def test_bad_sizes_say_why(spec: str) -> None:
    with pytest.raises(CheckError, match="--at-size"):
        parse_sizes([spec])


def test_scale_and_corners() -> None:
    assert parse_scale("1e3") == 1000.0 and parse_scale(None) is None
    with pytest.raises(CheckError):
        parse_scale("inf")
    assert corners((4, 1, 1)) == [(3, 0, 0), (0, 0, 0)]
    assert len(corners((2, 3, 4))) == 8


def test_unknown_names_are_noted() -> None:
    probe = AtSize(Findings(), {"nope": 5})
    assert probe.summary() == ["--at-size: no launched kernel has an integer argument named nope"]


def test_the_checks_can_be_turned_off() -> None:
    report = checked(int_arith.groups, checks=["out-of-bounds"])
    assert report.findings == []
