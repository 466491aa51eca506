"""Hatchet JSON, the layout Proton writes, so proton-viewer and llnl-hatchet read our files.

The file is a list: ``[root, device_table]``. Nodes are ``{"frame": {"name", "type"},
"metrics": {...}, "children": [...]}`` with each node's own (not inclusive) values. Our run
metadata and metric kinds ride in one more key of the root's frame, ``"deuteron"`` (a JSON
string, so hatchet can hash the frame): ROOT's children are only real frames, as code that counts
them expects, and proton-viewer, llnl-hatchet and Proton's own readers look at no frame key but
``name`` and ``type``. Files written before this (version 1) carried it in a leaf under the root,
a frame of type ``"metadata"``; the reader still takes that.
"""

from __future__ import annotations

import gc
import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deuteron.formats import FormatError, jsonio, msgpack_tree, parse_json
from deuteron.formats.files import atomic_write, read_bytes
from deuteron.model.metrics import INC, KINDS
from deuteron.model.tree import Node, Profile

METADATA_FRAME = "deuteron:metadata"
METADATA_TYPE = "metadata"
# The version of what the metadata carries (the tree itself is Proton's layout). 2: in the
# root's frame; 1: in a leaf under the root (still read).
FORMAT = "deuteron-hatchet"
VERSION = 2


_dumps = json.JSONEncoder(separators=(",", ":"), allow_nan=False, default=str).encode


def _finite(v: Any) -> bool:
    """Whether a value can be written (JSON has no NaN or infinity; a vector needs all finite)."""
    if v.__class__ is float:
        return math.isfinite(v)
    if v.__class__ is list:
        return all(x.__class__ is not float or math.isfinite(x) for x in v)
    return True


def _fields(node: Node) -> dict[str, Any]:
    metrics = {k: v for k, v in node.metrics.items() if _finite(v)}
    return {"frame": {"name": node.name, "type": node.type}, "metrics": metrics}


def layout(profile: Profile) -> tuple[Node, Callable[[Node], dict[str, Any]], Callable[[Node], list[Node]]]:
    """The tree as the file lays it out: its root, each node's ``frame``/``metrics`` fields (the
    root padded with zeros for every column and carrying our metadata), and each node's children.
    The JSON writer and the msgpack one both walk this."""
    string_valued: set[str] = set()
    all_names: set[str] = set()
    for node in profile.root.walk():
        for name, value in node.metrics.items():
            all_names.add(name)
            if isinstance(value, str):
                string_valued.add(name)
    numeric = sorted(n for n in all_names - string_valued if profile.kind(n) == INC)
    root_metrics = dict(profile.root.metrics)
    for name in numeric:  # as Proton: every inclusive column the tree has exists at ROOT (zero)
        root_metrics.setdefault(name, 0)
    meta = json.dumps(
        {"format": FORMAT, "version": VERSION, "metadata": profile.metadata, "kinds": profile.kinds},
        sort_keys=True,
        default=str,
    )
    root = profile.root

    def fields(node: Node) -> dict[str, Any]:
        if node is root:
            out = _fields(node)
            out["frame"]["deuteron"] = meta
            out["metrics"] = {k: v for k, v in root_metrics.items() if _finite(v)}
            return out
        return _fields(node)

    def children(node: Node) -> list[Node]:
        return list(node.children.values())

    return root, fields, children


def to_msgpack(profile: Profile) -> bytes:
    """The same document in msgpack (Proton's ``hatchet_msgpack``)."""
    root, fields, children = layout(profile)
    return msgpack_tree.pack(root, fields, children, profile.devices)


def chunks(profile: Profile) -> list[str]:
    """The file's text in pieces: ``[tree, device table]``, written without recursion."""
    root, fields, children = layout(profile)
    return ["[", *jsonio.tree_chunks(root, fields, children, dumps=_dumps), ",", _dumps(profile.devices), "]"]


def write(profile: Profile, path: str | os.PathLike[str]) -> Path:
    """Write atomically, at any depth: a crash or a full disk never leaves a truncated profile."""
    return atomic_write(path, "".join(chunks(profile)))


def read(path: str | os.PathLike[str]) -> Profile:
    # Building a tree makes objects by the hundred thousand and none of them cycles: the cycle
    # collector would rescan the growing tree again and again, doubling the time (measured).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        data = read_bytes(path, "profile")
        if msgpack_tree.is_msgpack_array(data):  # Proton's hatchet_msgpack: the same tree
            return from_json(msgpack_tree.loads(data, str(path)), str(path))
        return from_json(parse_json(data, path), str(path))
    finally:
        if was_enabled:
            gc.enable()


def from_json(data: Any, where: str = "profile") -> Profile:
    """A profile from a parsed hatchet document (ours, Proton's JSON or msgpack); hostile input fails
    in one line. One loop, no recursion, with a fast path: a well-formed node costs a few class
    checks and a dict copy; only an odd one (a missing key, a value out of range, a repeated frame,
    merged into the first) takes the careful checks. Then the kinds: ours from the metadata,
    Proton's inferred (a column its ROOT lacks is exclusive).
    """
    if not isinstance(data, list) or not data:
        raise FormatError(f"{where}: not a hatchet profile (expected a JSON list [tree, device table])")
    devices = data[1] if len(data) > 1 else {}
    if not isinstance(devices, dict):
        raise FormatError(f"{where}: the device table (second element) must be an object")
    profile = Profile(root=Node("ROOT"), devices=_check_devices(devices, where))
    meta_json: object = None
    string_metrics: set[str] = set()
    first = _check_node(data[0], where, "root")
    profile.root = Node(first["frame"]["name"], str(first["frame"].get("type", "function")))
    meta_json = first["frame"].get("deuteron")
    _take_metrics(profile.root, first["metrics"], string_metrics, where)
    stack = [(first, profile.root)]
    while stack:
        src, dst = stack.pop()
        children = dst.children
        for i, child in enumerate(src["children"]):
            try:  # the fast path for well-formed nodes; anything odd gets the careful check below
                frame = child["frame"]
                name, ntype, metrics = frame["name"], frame.get("type", "function"), child["metrics"]
                kids = child["children"]
                if name.__class__ is not str or metrics.__class__ is not dict or kids.__class__ is not list:
                    raise TypeError
            except (KeyError, TypeError, AttributeError):
                c = _check_node(child, where, f"child {i} of {dst.name!r}")
                frame, metrics = c["frame"], c["metrics"]
                name, ntype = frame["name"], frame.get("type", "function")
            if ntype == METADATA_TYPE and name == METADATA_FRAME:
                meta_json = frame.get("deuteron")
                continue
            key = (name, ntype if ntype.__class__ is str else str(ntype))
            node = children.get(key)
            if node is None and _plain(metrics):
                node = children[key] = Node(key[0], key[1])
                node.metrics = dict(metrics)
                for mname, value in metrics.items():
                    if value.__class__ is str:
                        string_metrics.add(mname)
            else:  # a repeated frame (merged into the first) or a value to check one by one
                node = node if node is not None else children.setdefault(key, Node(key[0], key[1]))
                _take_metrics(node, metrics, string_metrics, where)
            stack.append((child, node))
    if meta_json is not None:
        _apply_metadata(profile, meta_json, where)
    for name in string_metrics:
        profile.kinds.setdefault(name, "pty")
    for name in ("device_id", "device_type", "stream_id"):
        profile.kinds.setdefault(name, "pty")
    if meta_json is None:  # Proton's file: its ROOT carries every inclusive column; others are exclusive
        for name in profile.metric_names() - set(first["metrics"]):
            profile.kinds.setdefault(name, "exc")
    _drop_zero_root_columns(profile)
    return profile


# The largest magnitude a metric may have: beyond it (or not finite) a value is damage, not data.
LARGEST = 1e300


def _plain(metrics: dict[str, Any]) -> bool:
    """Whether every value is a string or a finite number within range (the fast path's test)."""
    for v in metrics.values():
        c = v.__class__
        if c is str:
            continue
        if (c is not int and c is not float) or not (-LARGEST <= v <= LARGEST):
            return False
    return True


# The longest vector metric a file may hold (Proton's vectors are per-kernel lists, short).
LONGEST_VECTOR = 1 << 16


def _take_metrics(node: Node, metrics: dict[str, Any], string_metrics: set[str], where: str) -> None:
    for name, value in metrics.items():
        if isinstance(value, list):
            if len(value) > LONGEST_VECTOR or not all(
                v.__class__ in (int, float) and -LARGEST <= v <= LARGEST for v in value
            ):
                raise FormatError(
                    f"{where}: metric {name!r} of frame {node.name!r} is a list that is not a vector "
                    f"of at most {LONGEST_VECTOR} finite numbers"
                )
            node.add(name, list(value))
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise FormatError(f"{where}: metric {name!r} of frame {node.name!r} is not a number or string")
        if isinstance(value, str):
            string_metrics.add(name)
        elif not -LARGEST <= value <= LARGEST:
            shown = (
                f"{value:.3g}" if isinstance(value, float) else f"an integer of {len(str(abs(value)))} digits"
            )
            raise FormatError(
                f"{where}: metric {name!r} of frame {node.name!r} is {shown}, "
                "not a finite number within ±1e300"
            )
        node.add(name, value)


def _drop_zero_root_columns(profile: Profile) -> None:
    """Proton pads the root with zeros so columns exist; those are not measurements."""
    for name in list(profile.root.metrics):
        if profile.root.metrics[name] == 0:
            del profile.root.metrics[name]


def _apply_metadata(profile: Profile, meta_json: object, where: str) -> None:
    if not isinstance(meta_json, str):
        raise FormatError(f"{where}: the deuteron metadata is damaged")
    try:
        meta = jsonio.loads(meta_json)
    except jsonio.JSONError:
        raise FormatError(f"{where}: the deuteron metadata is not valid JSON") from None
    if not isinstance(meta, dict):
        raise FormatError(f"{where}: the deuteron metadata is damaged")
    kinds = meta.get("kinds", {})
    if isinstance(kinds, dict):
        profile.kinds.update({str(k): v for k, v in kinds.items() if v in KINDS})
    if isinstance(meta.get("metadata"), dict):
        profile.metadata.update(meta["metadata"])


def _check_node(node: Any, where: str, what: str) -> dict[str, Any]:
    if not isinstance(node, dict):
        raise FormatError(f"{where}: {what} is not an object")
    frame = node.get("frame")
    if not isinstance(frame, dict) or not isinstance(frame.get("name"), str):
        raise FormatError(f"{where}: {what} has no frame name")
    if not isinstance(node.get("metrics", {}), dict):
        raise FormatError(f"{where}: metrics of {frame['name']!r} must be an object")
    if not isinstance(node.get("children", []), list):
        raise FormatError(f"{where}: children of {frame['name']!r} must be a list")
    node.setdefault("metrics", {})
    node.setdefault("children", [])
    return node


# Device-table fields the roofline reads, and the ranges a real device has.
_DEVICE_FIELDS = {"num_sms": 1e6, "clock_rate": 1e9, "memory_clock_rate": 1e9, "bus_width": 1e6}


def _check_devices(devices: dict[str, Any], where: str) -> dict[str, dict[str, dict[str, object]]]:
    for dtype, rows in devices.items():
        if not isinstance(rows, dict) or not all(isinstance(r, dict) for r in rows.values()):
            raise FormatError(f"{where}: device table entry {dtype!r} must map device ids to objects")
        for dev_id, row in rows.items():
            for field, most in _DEVICE_FIELDS.items():
                value = row.get(field)
                if value is None:
                    continue
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= most:
                    raise FormatError(
                        f"{where}: device {dtype} {dev_id}: {field} must be a number above 0 and at most "
                        f"{most:g}, not {str(value)[:40]}"
                    )
            arch = row.get("arch")
            if arch is not None and (
                not isinstance(arch, (str, int)) or isinstance(arch, bool) or len(str(arch)) > 32
            ):
                raise FormatError(f"{where}: device {dtype} {dev_id}: arch must be a short string")
    return devices
