"""Bugs of Triton's interpreter that stop correct GPU code, mended while Deuteron runs kernels in it
(part of the ``interpreter`` hook group, see :mod:`.interpreter`).

- Triton 3.6 turns a 1-element tensor into an int with ``int(array)``, which NumPy 2.4 refuses
  ("only 0-dimensional arrays..."), so loops over runtime bounds fail; 3.7 fixed it the way done
  here (``tl.tensor.__index__`` while a kernel runs). The GPU machines pair Triton 3.6 with NumPy 2.5.
- A Python float argument reaches the kernel as a Python float, where compiled Triton passes an
  fp32 scalar: ``eps.to(tl.float32)`` (Liger-Kernel's norms, cross entropy) raises
  ``AttributeError: 'float' object has no attribute 'to'``. Here it becomes the fp32 scalar.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from deuteron.process.patches import AttributePatch, Patch, WrapPatch


def _tensor_index(self: Any) -> int:
    data = self.handle.data
    return int(data.reshape(-1)[0]) if data.size == 1 else int(data)


def patches(interp: Any) -> list[Patch]:
    import triton.language as tl

    found: list[Patch] = []
    orig_tensor_patch = getattr(interp, "_patch_lang_tensor", None)
    if orig_tensor_patch is not None:

        def _patch_lang_tensor(tensor: Any, scope: Any) -> None:
            orig_tensor_patch(tensor, scope)
            scope.set_attr(tensor, "__index__", _tensor_index)

        found.append(AttributePatch(interp, "_patch_lang_tensor", _patch_lang_tensor))

    handle = getattr(interp, "TensorHandle", None)
    if handle is not None and hasattr(interp, "_implicit_cvt"):

        def floats_as_fp32(current: Callable[[Any], Any]) -> Callable[[Any], Any]:
            def _implicit_cvt(arg: Any) -> Any:
                if type(arg) is float:
                    return tl.tensor(handle(np.array([arg], dtype=np.float32), tl.float32), tl.float32)
                return current(arg)

            return _implicit_cvt

        found.append(WrapPatch(interp, "_implicit_cvt", floats_as_fp32))
    return found
