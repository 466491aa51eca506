"""``--advise`` names frames as the tree does: a C++ kernel by its short name (JSON keeps the raw)."""

from __future__ import annotations

import pytest

from deuteron.model import names
from deuteron.view.advise import Advice, render

MANGLED = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_"


@pytest.mark.skipif(not names.available(), reason="no libstdc++ to demangle with")
def test_advice_shows_short_kernel_names_and_json_keeps_the_raw_ones() -> None:
    finding = Advice("fusion", "ops to fuse", [{"path": f"step > aten::fill_ > {MANGLED}", "calls": 3}])
    text = render([finding])
    assert "step > aten::fill_ > vectorized_elementwise_kernel<…>  (calls=3)" in text and "_Z" not in text
    assert "at::native::FillFunctor<float>" in render([finding], full_names=True)
    assert finding.as_json()["evidence"][0]["path"].endswith(MANGLED)
