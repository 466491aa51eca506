"""``-c torch``: module path > aten op > kernel, backward under the module that made it. The
context source (:mod:`.source`) and its parts: the native op probe ``_torch_ops.cpp``, built on
first use against the installed torch (:mod:`.build`) and loaded with its C signatures
(:mod:`.library`); the ``nn.Module._call_impl`` wrapper (:mod:`.module_wrapper`, its per-call work in
:mod:`.calls`); the places (:mod:`.trie`); the CPU costs (:mod:`.costs`); the environment's
switches (:mod:`.settings`); the trace's spans (:mod:`.spans`); Deuteron's own ops, unseen
(:mod:`.unobserved`).
Importing this package does not import torch."""
