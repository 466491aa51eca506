"""``deuteron view`` shows C++ kernels by short names; ``--full-names`` demangled in full; filters
match either form or the raw name; the file itself is never rewritten."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from deuteron.model import names
from tests.helpers.cli import run_cli

FILL = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_"
SHADOW = Path(__file__).resolve().parents[1] / "fixtures" / "proton" / "proton_shadow.hatchet"

pytestmark = pytest.mark.skipif(not names.available(), reason="no libstdc++ to demangle with")


def _view(*args: str, cwd: Path) -> str:
    result = run_cli("view", str(SHADOW), *args, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_view_shows_short_kernel_names_and_no_mangled_ones(tmp_path: Path) -> None:
    before = hashlib.sha256(SHADOW.read_bytes()).hexdigest()
    out = _view("--print-sorted", cwd=tmp_path)
    assert "_Z" not in out
    for short in (
        "vectorized_elementwise_kernel<…>",
        "reduce_kernel<…>",
        "multi_tensor_apply_kernel<…>",
        "Kernel2<cutlass_80_simt_sgemm_64x64_8x5_tn_align1>",
        "splitKreduce_kernel<…>",
    ):
        assert f"─ {short}\n" in out, short
    assert "─ add_kernel\n" in out, "a Triton kernel's name is unchanged"
    # each kernel keeps its own row: six vectorized_elementwise_kernel variants, six rows
    tree = out.split("Sorted frames")[0]
    assert tree.count("─ vectorized_elementwise_kernel<…>\n") == 6
    assert hashlib.sha256(SHADOW.read_bytes()).hexdigest() == before, "the file is never rewritten"


def test_full_names_show_the_demangled_text(tmp_path: Path) -> None:
    out = _view("--full-names", cwd=tmp_path)
    assert "_Z" not in out
    assert (
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
        "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)"
    ) in out
    assert "cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_nn_align1>(" in out
    assert "─ add_kernel\n" in out


def test_filters_match_the_shown_full_or_raw_name(tmp_path: Path) -> None:
    short = _view("-i", "reduce_kernel", cwd=tmp_path)
    assert short.count("─ reduce_kernel<…>") == 2 and "add_kernel" not in short
    full = _view("-i", ".*at::native::FillFunctor<float>", cwd=tmp_path)
    assert full.count("─ vectorized_elementwise_kernel<…>") == 1 and "reduce_kernel" not in full
    raw = _view("-i", "_ZN7cutlass", cwd=tmp_path)
    assert raw.count("─ Kernel2<") == 2 and "reduce_kernel" not in raw
    dropped = _view("-e", ".*multi_tensor_apply_kernel", cwd=tmp_path)
    assert "multi_tensor_apply_kernel" not in dropped and "add_kernel" in dropped


def test_json_keeps_the_recorded_names(tmp_path: Path) -> None:
    doc = json.dumps(json.loads(_view("--json", cwd=tmp_path)))
    assert FILL in doc
