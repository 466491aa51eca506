"""``-c torch``: module path > aten op > kernel, backward under the module that made it. The
context source (:mod:`.source`), the ``nn.Module._call_impl`` wrapper (:mod:`.calls`), and the native
op probe ``_torch_ops.cpp``, built on first use against the installed torch (:mod:`.build`).
Importing this package does not import torch."""
