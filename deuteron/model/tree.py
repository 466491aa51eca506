"""The calling-context tree: the one data model every command reads.

A node is a frame (a scope, a Python frame, a kernel, a state) with the metrics recorded
*at* that frame; inclusive values are derived by processors, never stored. Children are keyed
by (name, type) so the same call path always lands on the same node.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from deuteron.model.errors import MetricError
from deuteron.model.metrics import INC, PTY, split_kind

# A metric is a number, a string (properties), or a vector of numbers (Proton's list metrics,
# added element by element).
MetricValue = int | float | str | list[int | float]

FUNCTION = "function"
KERNEL = "kernel"
STATE = "state"
# Proton's state around computing a kernel's launch metadata (that work is not the workload).
LAUNCH_METADATA_STATE = "__proton_launch_metadata"
# Proton's name for a kernel that copies a device-tensor metric (bookkeeping, filed under the
# launch-metadata frames rather than by its own name).
METRIC_KERNEL = "<metric>"


class Node:
    """One frame of the tree: the metrics recorded at it (exclusive) and its children by (name, type).

    ``__slots__`` and no parent pointer, since a profile may hold millions of nodes. :meth:`child`
    runs at every launch, and uses ``setdefault`` so two threads making one new frame get one node.
    """

    __slots__ = ("name", "type", "metrics", "children")

    def __init__(self, name: str, type: str = FUNCTION) -> None:
        self.name = name
        self.type = type
        self.metrics: dict[str, MetricValue] = {}
        self.children: dict[tuple[str, str], Node] = {}

    def child(self, name: str, type: str = FUNCTION) -> Node:
        """The child with this frame, made on first use."""
        key = (name, type)
        node = self.children.get(key)
        if node is None:
            node = self.children.setdefault(key, Node(name, type))
        return node

    def add(self, name: str, value: MetricValue, kind: str = INC) -> None:
        """Record one value: numbers add up, vectors element by element (a vector of another
        length replaces the old one), properties and strings overwrite."""
        if kind == PTY or isinstance(value, str):
            self.metrics[name] = value
            return
        old = self.metrics.get(name)
        if isinstance(value, list) or isinstance(old, list):
            if isinstance(value, list) and isinstance(old, list) and len(old) == len(value):
                self.metrics[name] = [a + b for a, b in zip(old, value, strict=True)]
            else:
                self.metrics[name] = list(value) if isinstance(value, list) else value
            return
        self.metrics[name] = value if old is None or isinstance(old, str) else old + value

    def walk(self) -> Iterator[Node]:
        """Every node below and including this one, parents before children, iteratively."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(list(node.children.values())))

    def __repr__(self) -> str:
        return f"Node({self.name!r}, {self.type!r}, {self.metrics!r}, {len(self.children)} children)"


def path_to(root: Node, target: Node) -> list[str]:
    """Names from ``root`` (excluded) down to ``target``; nodes know only their children."""
    stack: list[tuple[Node, list[str]]] = [(root, [])]
    while stack:
        node, names = stack.pop()
        if node is target:
            return names
        for child in node.children.values():
            stack.append((child, names + [child.name]))
    raise ValueError(f"{target.name!r} is not in the tree under {root.name!r}")


def node_paths(root: Node) -> dict[int, tuple[str, ...]]:
    """Every node's path of names from the root (included), keyed by the node's identity."""
    out: dict[int, tuple[str, ...]] = {id(root): (root.name,)}
    stack = [root]
    while stack:
        node = stack.pop()
        base = out[id(node)]
        for child in node.children.values():
            out[id(child)] = base + (child.name,)
            stack.append(child)
    return out


def on_paths_to(root: Node, hot: Callable[[Node], bool]) -> set[int]:
    """The identities of the nodes ``hot`` accepts and of all their ancestors (the root too): what
    a tree cut down to those nodes keeps. Judged on the nodes themselves, not copies, so ``hot``
    may test their identity."""
    order: list[tuple[Node, Node | None]] = []
    stack: list[tuple[Node, Node | None]] = [(root, None)]
    while stack:
        node, parent = stack.pop()
        order.append((node, parent))
        stack.extend((child, node) for child in node.children.values())
    wanted = {id(root)}
    for node, parent in reversed(order):  # children before parents
        if parent is not None and (id(node) in wanted or hot(node)):
            wanted.update((id(node), id(parent)))
    return wanted


def plain_value(name: str, value: object) -> MetricValue:
    """A metric value as a plain number or string: numpy and torch scalars become Python ones."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float, str)):
        return value
    if isinstance(value, (list, tuple)) or getattr(value, "ndim", 0) >= 1:  # a vector metric
        items: Any = value.tolist() if hasattr(value, "tolist") else list(value)  # type: ignore[call-overload]
        flat = [plain_value(name, v) for v in items]
        if all(isinstance(v, (int, float)) for v in flat):
            return flat  # type: ignore[return-value]
        raise MetricError(f"metric {name!r}: a vector metric holds numbers only")
    item = getattr(value, "item", None)
    if callable(item):
        try:
            plain = item()
        except (TypeError, ValueError, RuntimeError):
            plain = None
        if isinstance(plain, (int, float)) and not isinstance(plain, bool):
            return plain
    raise MetricError(f"metric {name!r} must be a number or a string, not {type(value).__name__}")


@dataclass
class Profile:
    """A tree plus what is needed to read it: metric kinds, the device table and run metadata."""

    root: Node = field(default_factory=lambda: Node("ROOT"))
    kinds: dict[str, str] = field(default_factory=dict)
    devices: dict[str, dict[str, dict[str, object]]] = field(default_factory=dict)
    metadata: dict[str, object] = field(default_factory=dict)
    # True for trees whose nodes hold inclusive values (made by processors, never written).
    inclusive: bool = False

    def kind(self, metric: str) -> str:
        return self.kinds.get(metric, INC)

    def declare(self, raw_name: str) -> tuple[str, str]:
        """Register a user metric name (with an optional Proton suffix) and return (name, kind)."""
        name, kind = split_kind(raw_name)
        self.kinds.setdefault(name, kind)
        return name, self.kinds[name]

    def add_metrics(self, node: Node, metrics: Mapping[str, object]) -> None:
        for raw_name, value in metrics.items():
            name, kind = self.declare(raw_name)
            node.add(name, plain_value(raw_name, value), kind)

    def metric_names(self) -> set[str]:
        names: set[str] = set()
        for node in self.root.walk():
            names.update(node.metrics)
        return names

    def node_count(self) -> int:
        return sum(1 for _ in self.root.walk())
