"""Where a kernel's PC samples go in the tree: under the kernel's nodes, as ``file:line@kernel`` rows.

CUPTI's continuous sampling does not say which launch a sample came from, only which kernel
function (the price of not serialising kernels, see ``backends/cupti/sampling.py``). So the samples
of one drain are shared among the nodes that kernel was filed under since the previous drain, in
proportion to the GPU time each node got: exact when a kernel runs from one place (the common
case), and an estimate, said in the file's metadata, when it runs from several.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from deuteron.model.intra import ScopeRow
from deuteron.model.tree import KERNEL, Node, Profile

UNFILED = "<sampled kernels not filed>"  # samples of a kernel no node of this session ran


def split_counts(total: int, weights: list[int]) -> list[int]:
    """``total`` shared in proportion to ``weights`` in whole numbers that add up to ``total``
    (largest remainder); equal shares when every weight is 0."""
    n = len(weights)
    if n == 1:
        return [total]
    w = np.asarray(weights, dtype=np.float64)
    if w.sum() <= 0:
        w = np.ones(n)
    exact = total * w / w.sum()
    out = np.floor(exact).astype(np.int64)
    short = total - int(out.sum())
    if short:
        out[np.argsort(-(exact - out), kind="stable")[:short]] += 1
    return [int(v) for v in out]


@dataclass
class SampleFiler:
    """The session's record of which nodes each kernel function ran under since the last drain of
    samples (``saw``), and the filing of a drain's rows there (``file``)."""

    times: dict[str, dict[int, tuple[Node, int]]] = field(default_factory=dict)
    shared_kernels: set[str] = field(default_factory=set)  # kernels whose samples were split

    def saw(self, symbol: str, node: Node, time_ns: int) -> None:
        nodes = self.times.setdefault(symbol, {})
        known = nodes.get(id(node))
        nodes[id(node)] = (node, (known[1] if known else 0) + int(time_ns))

    def file(self, profile: Profile, rows_by_symbol: dict[str, list[ScopeRow]]) -> None:
        for symbol, rows in rows_by_symbol.items():
            places = list(self.times.get(symbol, {}).values())
            if not places:
                kernel = profile.root.child(UNFILED).child(symbol, KERNEL)
                places = [(kernel, 1)]
            if len(places) > 1:
                self.shared_kernels.add(symbol)
            weights = [t for _, t in places]
            for row in rows:
                shares: list[dict[str, int]] = [{} for _ in places]
                for metric, value in row.metrics.items():
                    for share, part in zip(shares, split_counts(int(value), weights), strict=True):
                        if part:
                            share[metric] = part
                for (kernel, _), share in zip(places, shares, strict=True):
                    if share:
                        node = kernel
                        for name in row.path:
                            node = node.child(name)
                        profile.add_metrics(node, share)
        self.times.clear()
