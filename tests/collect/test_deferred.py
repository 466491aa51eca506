"""Proton's roofline metrics keep one value type however a program gives them (Triton 3.9's
``ROOFLINE_DTYPES``): flops of every width are doubles, bytes integers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch
import triton
import triton.language as tl

import deuteron
from deuteron.collect.deferred import roofline_value, roofline_values, transform_tensor_metrics


def test_roofline_values_take_protons_types() -> None:
    assert roofline_value("flops", 3) == 3.0 and isinstance(roofline_value("flops", 3), float)
    assert roofline_value("flops16", np.int32(2)) == 2.0 and isinstance(roofline_value("flops16", 2), float)
    assert roofline_value("bytes", 7.9) == 7 and isinstance(roofline_value("bytes", 7.9), int)
    assert roofline_value("bytes", [1.0, 2.5]) == [1, 2]
    assert roofline_value("flops", np.array([1, 2])) == [1.0, 2.0]
    assert roofline_value("count", 3) == 3 and roofline_value("flops", "many") == "many"  # refused later
    plain = {"a": 1}
    assert roofline_values(plain) is plain
    scalars, later = transform_tensor_metrics({"bytes": torch.tensor(4.0), "flops": torch.tensor([1, 2])})
    assert scalars == {"bytes": 4, "flops": [1.0, 2.0]} and not later
    assert isinstance(scalars["bytes"], int)


def _meta(grid: Any, metadata: Any, args: dict[str, Any]) -> dict[str, Any]:
    return {"name": "typed", "flops": 8, "bytes": 3.0, "flops32": torch.tensor(4)}


@triton.jit(launch_metadata=_meta)
def _copy(x):
    tl.store(x, tl.load(x))


def test_scopes_and_launch_metadata_store_protons_types(tmp_path: Path) -> None:
    """A scope may give ``flops`` as an int and the next as a float (no type mismatch: both are
    doubles); a launch_metadata's values are typed the same way."""
    deuteron.start(str(tmp_path / "r"), backend="interpreter", hook="triton")
    with deuteron.scope("s", {"flops": 1, "bytes": 2.5}):
        pass
    with deuteron.scope("s", {"flops": 1.0, "bytes": 2}):
        pass
    _copy[(1,)](torch.zeros(4))
    deuteron.finalize()
    root = json.loads((tmp_path / "r.hatchet").read_text())[0]
    children = {c["frame"]["name"]: c["metrics"] for c in root["children"]}
    scope, kernel = children["s"], children["typed"]
    assert scope == {"flops": 2.0, "bytes": 4}
    assert isinstance(scope["flops"], float) and isinstance(scope["bytes"], int)
    assert (kernel["flops"], kernel["bytes"], kernel["flops32"]) == (8.0, 3, 4.0)
    assert isinstance(kernel["flops"], float) and isinstance(kernel["bytes"], int)
    assert isinstance(kernel["flops32"], float)
