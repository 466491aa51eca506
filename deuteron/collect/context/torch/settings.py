"""What ``-c torch`` observes, as the environment chooses it: whether op input shapes are read for
flops (``DEUTERON_TORCH_FLOPS``) and whether aten ops are observed always, until they repeat, or
never (``DEUTERON_TORCH_OPS``).

Apart from the context source because these are the run's policy, decided once at start from
the environment and whether a GPU backend records, and testable without torch or the library.
"""

from __future__ import annotations

import os

from deuteron.collect.context.torch.library import TorchContextError

OFF = ("0", "off", "no", "false")
ON = ("1", "on", "yes", "true")


def flops_wanted(on_gpu: bool) -> bool:
    """Whether to read op input shapes for flops: on by default on the CPU, where they are the
    only measure of work; off by default with a GPU backend, where boxing every op's inputs
    costs most on a launch-bound step (DEUTERON_TORCH_FLOPS=1/0 decides either way)."""
    chosen = os.environ.get("DEUTERON_TORCH_FLOPS", "").strip().lower()
    if chosen:
        return chosen not in OFF
    return not on_gpu


def ops_wanted(on_gpu: bool) -> tuple[bool, bool]:
    """Whether aten ops are seen, and whether they are inferred at launches once they repeat.

    ``DEUTERON_TORCH_OPS``: ``all`` observes every op for the whole run; ``0`` none (modules,
    backward nodes and the optimizer only); ``infer``, the default with a GPU backend, observes
    ops only until each launch's op repeats at the same position in its module call, then
    stops the op callback (torch's own cost of it is most of ``-c torch``'s on a launch-bound
    step) and checks every later launch's kernel against what was learned. Flops need every
    op's inputs, so ``DEUTERON_TORCH_FLOPS=1`` makes the default ``all``; without a GPU there
    are no launches to learn from, and the default is ``all`` too.
    """
    chosen = os.environ.get("DEUTERON_TORCH_OPS", "").strip().lower()
    flops = os.environ.get("DEUTERON_TORCH_FLOPS", "").strip().lower() in ON
    if chosen in (*OFF, "none"):
        return False, False
    if chosen in (*ON, "all"):
        return True, False
    if chosen == "infer":
        if flops:
            raise TorchContextError(
                "DEUTERON_TORCH_OPS=infer and DEUTERON_TORCH_FLOPS=1 do not go together: flops "
                "need every op observed (DEUTERON_TORCH_OPS=all)"
            )
        return True, True
    if chosen not in ("", "auto"):
        raise TorchContextError(
            f"DEUTERON_TORCH_OPS={chosen!r}: expected all, infer or 0 (infer is the default with a GPU)"
        )
    return True, on_gpu and not flops
