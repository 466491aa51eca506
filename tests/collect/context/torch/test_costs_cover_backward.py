"""A module's CPU time covers the backward filed under it (issue 39), on the op probe's trie as the
costs filing reads it: with backward nodes timed (a CPU run) and with them read at launches and
untimed while the ops they ran are timed (a GPU run, where a Llama's ``lm_head`` showed 5.8 ms of
forward under an 11.5 ms backward)."""

from __future__ import annotations

import numpy as np

from deuteron.collect.context.torch.costs import cover_backward
from deuteron.collect.context.torch.trie import BACKWARD, BASE, MARK, MODULE, OP

# ids: 1 base > 2 model > 3 lm_head > (4 aten::linear, 5 backward mark > 6 MmBackward0 > 7 aten::mm)
PARENT = np.array([0, 0, 1, 2, 3, 3, 5, 6], np.uint32)
KIND = np.array([0, BASE, MODULE, MODULE, OP, MARK, BACKWARD, OP], np.uint8)


def _covered(ns: list[int], untimed_kinds: tuple[int, ...], parent: np.ndarray = PARENT,
             kind: np.ndarray = KIND) -> np.ndarray:  # fmt: skip
    out = np.array(ns, np.int64)
    untimed = np.isin(kind, untimed_kinds)
    cover_backward(out, parent, kind, untimed)
    return out


def test_a_timed_backward_is_added_to_its_module_and_the_modules_around_it() -> None:
    # forward: model 10, lm_head 6, linear 5; backward: the mark holds its node's 12 (the node's 11 op)
    ns = _covered([0, 0, 10, 6, 5, 12, 12, 11], ())
    assert ns[3] == 6 + 12 and ns[2] == 10 + 12
    assert ns[1] == 0  # a base is a context, not a timed frame
    assert ns[4] == 5 and ns[5] == 12  # the op and the mark keep their own


def test_untimed_backward_nodes_are_covered_by_the_ops_they_ran() -> None:
    # a GPU run: the mark and the node have no time of their own; the op under them has 11
    ns = _covered([0, 0, 10, 6, 5, 0, 0, 11], (MARK, BACKWARD))
    assert ns[3] == 6 + 11 and ns[2] == 10 + 11


def test_with_ops_untimed_too_nothing_is_known_below_the_mark() -> None:
    ns = _covered([0, 0, 10, 6, 5, 0, 0, 11], (MARK, BACKWARD, OP))
    assert ns[3] == 6 and ns[2] == 10


def test_engine_work_after_a_node_is_covered_by_the_node() -> None:
    """Autograd sums the bias gradient (``aten::sum``, 8) after ``AddmmBackward0``'s span (12)
    ended, under the node: the node covers its ops (11 + 8), the mark and the module follow."""
    parent = np.append(PARENT, 6).astype(np.uint32)  # 8: aten::sum under the backward node
    kind = np.append(KIND, OP).astype(np.uint8)
    ns = _covered([0, 0, 10, 6, 5, 12, 12, 11, 8], (), parent, kind)
    assert ns[6] == 19 and ns[5] == 19
    assert ns[3] == 6 + 19 and ns[2] == 10 + 19
