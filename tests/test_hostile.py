"""Every file Deuteron reads may be hostile: whatever it holds, the answer is a result or one line
``deuteron: error: ...`` and exit 2, never a traceback, a hang or a runaway allocation. Named cases
first (each one a traceback or a hang before), then a fuzz over mutations of real files."""

from __future__ import annotations

import io
import json
import os
import zipfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deuteron.cli import main
from deuteron.formats import FormatError, access_record, check_json, chrome_trace, explain_json, hatchet
from deuteron.model.finding import CheckReport, Finding
from deuteron.model.tree import KERNEL, Profile
from tests.helpers.cli import run_cli
from tests.helpers.paths import PROTON_FIXTURES


def _good_profile() -> Profile:
    p = Profile()
    k = p.root.child("train").child("add_kernel", KERNEL)
    k.metrics.update({"time (ns)": 1000, "count": 2, "bytes": 4096, "flops": 10})
    p.devices = {
        "CUDA": {
            "0": {
                "arch": "90",
                "num_sms": 132,
                "clock_rate": 1980000,
                "memory_clock_rate": 2619000,
                "bus_width": 5120,
            }
        }
    }
    return p


def _in_process(*args: str) -> tuple[int, str, str]:
    """``deuteron ARGS`` in this process: any exception other than a clean exit fails the test."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def _one_line_exit_2(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("deuteron: error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], lines[0]


def _hatchet_with(root_metrics: str, devices: str = "{}") -> str:
    root = f'{{"frame": {{"name": "ROOT", "type": "function"}}, "metrics": {root_metrics}, "children": []}}'
    return f"[{root}, {devices}]"


@pytest.mark.parametrize(
    ("content", "args", "needles"),
    [
        (_hatchet_with('{"time (ns)": 1e400}'), (), ("time (ns)", "not a finite number")),
        (_hatchet_with('{"time (ns)": ' + "9" * 5000 + "}"), (), ("not valid JSON",)),
        (_hatchet_with('{"time (ns)": ' + "9" * 400 + "}"), (), ("an integer of 400 digits",)),
        (_hatchet_with('{"time (ns)": NaN}'), (), ("not a finite number",)),
        (
            _hatchet_with('{"time (ns)": 5, "bytes": 9}', '{"CUDA": {"0": {"arch": "90", "num_sms": 0}}}'),
            ("-m", "util"),
            ("num_sms must be a number above 0",),
        ),
        (
            _hatchet_with('{"time (ns)": 5}', '{"CUDA": {"0": {"arch": "90", "num_sms": 1e400}}}'),
            (),
            ("num_sms",),
        ),
        (
            '[{"frame": {"name": "R"}, "metrics": {}, "children": [{"frame": {"name": "deuteron:metadata", '
            '"type": "metadata", "deuteron": "' + "[" * 50000 + '"}}]}]',
            (),
            ("metadata",),
        ),
        (_hatchet_with('{"time (ns)": 5}'), ("-m", ",,,"), ("-m names no metric",)),
    ],
)
def test_named_hostile_profiles(
    tmp_path: Path, content: str, args: tuple[str, ...], needles: tuple[str, ...]
):
    path = tmp_path / "bad.hatchet"
    path.write_text(content)
    code, _, err = _in_process("view", str(path), *args)
    _one_line_exit_2(code, err, *needles)


def test_hostile_paths(tmp_path: Path):
    loop = tmp_path / "loop.hatchet"
    os.symlink(loop, loop)
    _one_line_exit_2(*_in_process("view", str(loop))[::2], "loop.hatchet")
    long = tmp_path / ("x" * 5000)
    _one_line_exit_2(*_in_process("view", str(long))[::2])
    _one_line_exit_2(*_in_process("view", "/dev/zero")[::2], "not a regular file")
    _one_line_exit_2(*_in_process("view", str(tmp_path))[::2], "is a directory")
    fifo = tmp_path / "fifo.hatchet"
    os.mkfifo(fifo)
    proc = run_cli("view", str(fifo), cwd=tmp_path, timeout=30)  # would block forever on open()
    _one_line_exit_2(proc.returncode, proc.stderr, "is a FIFO")


def test_size_limit_is_checked_before_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = hatchet.write(_good_profile(), tmp_path / "p.hatchet")
    monkeypatch.setenv("DEUTERON_MAX_FILE_BYTES", "100")
    with pytest.raises(FormatError, match="more than the limit of 100 .*DEUTERON_MAX_FILE_BYTES"):
        hatchet.read(path)
    monkeypatch.delenv("DEUTERON_MAX_FILE_BYTES")
    assert hatchet.read(path).node_count() == 3


def test_names_cannot_drive_the_terminal(tmp_path: Path):
    p = _good_profile()
    evil = p.root.child("\x1b[2J\x1b]0;pwned\x07clear")
    evil.child("line\n999.000  forged row", KERNEL).metrics.update({"time (ns)": 1, "count": 1})
    p.root.child("bidi\u202eevil\ud800").metrics["time (ns)"] = 1
    path = hatchet.write(p, tmp_path / "evil.hatchet")
    code, out, err = _in_process("view", str(path), "-m", "time/ns")
    assert code == 0, err
    assert "\x1b" not in out and "\u202e" not in out and "\x07" not in out
    assert len(out.splitlines()) == 1 + p.node_count()  # the header and one row per node: nothing forged
    assert "\\x1b[2J\\x1b]0;pwned\\x07clear" in out and "line\\n999.000  forged row" in out
    # an error message naming a hostile path is escaped too
    code, _, err = _in_process("view", str(tmp_path / "no\x1b[31mred.hatchet"))
    assert code == 2 and "\x1b" not in err and "\\x1b[31m" in err


@pytest.mark.parametrize(
    "text",
    [
        '{"traceEvents": [{"ph": "X", "name": "k", "ts": Infinity, "dur": 1}]}',
        '{"traceEvents": [{"ph": "X", "name": "k", "ts": 1, "dur": -5}]}',
    ],
    ids=["infinite-ts", "negative-dur"],
)
@pytest.mark.broken_profile  # a negative duration on purpose
def test_hostile_traces(tmp_path: Path, text: str):
    path = tmp_path / "t.chrome_trace"
    path.write_text(text)
    with pytest.raises(FormatError, match="out of range"):
        chrome_trace.read(path)


def _record(tmp_path: Path, name: str = "r.npz", **overrides: object) -> Path:
    header = {
        "format": "deuteron-access-record",
        "version": 1,
        "lanes": 2,
        "dropped_lanes": 0,
        "limit": 10,
        "sites": [{"file": "k.py", "line": 3, "function": "k"}],
        "launches": [
            {
                "index": 1,
                "kernel": "k",
                "file": "k.py",
                "grid": [1, 1, 1],
                "tensors": [
                    {
                        "name": "x",
                        "shape": [4],
                        "strides": [1],
                        "dtype": "float32",
                        "element_size": 4,
                        "storage": 0,
                        "offset": 0,
                    }
                ],
                "storages": [{"nbytes": 16, "granule": 4}],
                "programs": [[0, 0, 0]],
            }
        ],
    }
    rows = np.array([(0, 0, 1, 0, 0, 0, 2)], dtype=access_record.ROW)
    arrays = {
        "header": np.frombuffer(json.dumps(header).encode(), np.uint8),
        "accesses": rows,
        "offsets": np.array([0, 4], np.int64),
    }
    arrays.update(overrides)  # type: ignore[arg-type]
    path = tmp_path / name
    np.savez_compressed(path, **arrays)  # type: ignore[arg-type]
    return path


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"header": np.frombuffer(b"[1, 2]", np.uint8)}, "format 'list'"),
        ({"header": np.zeros(3, np.float64)}, "header is not UTF-8 JSON"),
        ({"accesses": np.zeros(3, np.int64)}, "accesses have dtype"),
        ({"offsets": np.zeros((2, 2), np.int64)}, "offsets have dtype"),
        ({"accesses": np.array([(5, 0, 1, 0, 0, 0, 2)], dtype=access_record.ROW)}, "names launch 5"),
        ({"accesses": np.array([(0, 0, 1, 0, 0, 1, 9)], dtype=access_record.ROW)}, "run past the end"),
        ({"accesses": np.array([(0, 0, 7, 0, 0, 0, 2)], dtype=access_record.ROW)}, "unknown access kind"),
        ({"accesses": np.array([(0, 0, 1, 0, 4, 0, 2)], dtype=access_record.ROW)}, "site"),
    ],
)
def test_hostile_access_records(tmp_path: Path, override: dict[str, np.ndarray], message: str):
    assert access_record.read(_record(tmp_path, "good.npz"))[0]["lanes"] == 2
    with pytest.raises(FormatError, match=message):
        access_record.read(_record(tmp_path, **override))


def test_zip_bomb_is_refused_before_inflating(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = tmp_path / "bomb.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for member in ("header.npy", "accesses.npy"):
            z.writestr(member, b"")
        z.writestr("offsets.npy", b"\0" * (64 << 20))  # 64 MiB of zeros, 64 KiB compressed
    assert path.stat().st_size < 1 << 20
    monkeypatch.setenv("DEUTERON_MAX_FILE_BYTES", str(16 << 20))
    with pytest.raises(FormatError, match="would inflate to 67,108,864 bytes"):
        access_record.read(path)


def test_explain_and_check_json_readers(tmp_path: Path):
    path = tmp_path / "x.json"
    path.write_text('{"format": "deuteron-explain", "version": 1, "kernels": 3}')
    with pytest.raises(FormatError, match="no kernels list"):
        explain_json.read(path)
    report = CheckReport(findings=[Finding("race", "error", "m", "k.py", 3, "k")], launches=1, programs=2)
    back = check_json.read(check_json.write(report, tmp_path / "c.json"))
    assert back.findings[0].kind == "race" and back.launches == 1
    path.write_text('{"format": "deuteron-check", "version": 1, "findings": [{"kind": 1}]}')
    with pytest.raises(FormatError, match="finding 0"):
        check_json.read(path)


# --- fuzzing: mutations of real files -------------------------------------------------------------


def _seeds(tmp: Path) -> dict[str, bytes]:
    seeds = {"ours.hatchet": hatchet.write(_good_profile(), tmp / "ours.hatchet").read_bytes()}
    for name in ("proton_shadow.hatchet", "proton_python.hatchet"):
        if (PROTON_FIXTURES / name).is_file():
            seeds[name] = (PROTON_FIXTURES / name).read_bytes()
    return seeds


_MUTATIONS = st.lists(
    st.tuples(
        st.sampled_from(["flip", "cut", "insert", "swap_token"]),
        st.integers(0, 10**9),
        st.binary(min_size=1, max_size=8),
    ),
    min_size=1,
    max_size=4,
)
_TOKENS = [
    b"1e400",
    b"-1",
    b"NaN",
    b"null",
    b"[]",
    b"{}",
    b'"\\ud800"',
    b"9" * 40,
    b'"\\u001b[2J"',
    b"[[[[[[",
    b"true",
    b"0",
    b'"device_id"',
    b'{"frame": {"name": 1}}',
]


def _mutate(data: bytes, mutations: list[tuple[str, int, bytes]]) -> bytes:
    buf = bytearray(data)
    for kind, at, blob in mutations:
        if not buf:
            break
        i = at % len(buf)
        if kind == "flip":
            buf[i] ^= blob[0] or 1
        elif kind == "cut":
            del buf[i : i + 1 + blob[0] % 64]
        elif kind == "insert":
            buf[i:i] = blob
        else:
            buf[i:i] = _TOKENS[blob[0] % len(_TOKENS)]
    return bytes(buf)


@pytest.mark.slow
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 10),
    mutations=_MUTATIONS,
    metrics=st.sampled_from(["time/ms", "util", "count", "gbyte/s,avg_time/us"]),
)
def test_fuzz_view_of_mutated_profiles(
    tmp_path: Path, seed: int, mutations: list[tuple[str, int, bytes]], metrics: str
):
    seeds = _seeds(tmp_path)
    name = sorted(seeds)[seed % len(seeds)]
    path = tmp_path / f"fuzz_{name}"
    path.write_bytes(_mutate(seeds[name], mutations))
    code, out, err = _in_process("view", str(path), "-m", metrics, "--device", "h100")
    if code != 0:
        _one_line_exit_2(code, err)
    assert "\x1b" not in out


@pytest.mark.slow
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutations=_MUTATIONS, which=st.sampled_from(["trace", "record", "check", "explain"]))
def test_fuzz_other_readers(tmp_path: Path, mutations: list[tuple[str, int, bytes]], which: str):
    if which == "trace":
        src = tmp_path / "t.chrome_trace"
        src.write_text(
            '{"traceEvents": [{"ph": "X", "name": "k", "ts": 1.5, "dur": 2, "tid": 3, '
            '"args": {"call_stack": ["ROOT", "k"]}}, {"ph": "M", "name": "thread_name"}]}'
        )
        reader = chrome_trace.read
    elif which == "record":
        src, reader = _record(tmp_path, "seed.npz"), access_record.read
    elif which == "check":
        report = CheckReport(findings=[Finding("race", "error", "m", "k.py", 3, "k", program=(1, 0, 0))])
        src, reader = check_json.write(report, tmp_path / "c.json"), check_json.read
    else:
        src, reader = (
            explain_json.write(
                {"kernels": [], "ranking": [], "device": None, "errors": []}, tmp_path / "e.json"
            ),
            explain_json.read,
        )
    path = tmp_path / f"mutated_{which}"
    path.write_bytes(_mutate(src.read_bytes(), mutations))
    try:
        reader(path)
    except FormatError as exc:
        assert "\n" not in str(exc).strip()


def test_mutated_profiles_in_real_processes(tmp_path: Path):
    """Sixteen mutated files through the real command: one line, exit 2, no traceback."""
    import random

    rng = random.Random(7)
    seed = _seeds(tmp_path)["ours.hatchet"]
    failures = 0
    for i in range(16):
        mutations = [
            (
                rng.choice(["flip", "cut", "insert", "swap_token"]),
                rng.randrange(10**9),
                bytes([rng.randrange(256)]),
            )
            for _ in range(rng.randint(1, 3))
        ]
        path = tmp_path / f"m{i}.hatchet"
        path.write_bytes(_mutate(seed, mutations))
        proc = run_cli("view", str(path), "-m", "time/ms,util", cwd=tmp_path)
        assert "Traceback" not in proc.stderr, proc.stderr
        if proc.returncode:
            _one_line_exit_2(proc.returncode, proc.stderr)
            failures += 1
    assert failures > 0  # the mutations do reach the error paths
