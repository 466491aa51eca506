"""Hatchet trees in msgpack (Proton's ``hatchet_msgpack``), packed and unpacked without recursion.

msgpack's own packer and unpacker recurse and stop at a few hundred levels; a profile of 10 000
nested scopes must survive. So the tree's nesting is walked here with an explicit stack, and
msgpack only packs or unpacks each node's flat maps. The reader gives the same plain structure
JSON gives; :mod:`.hatchet` checks every name, number and device row of it, so a hostile msgpack
file is refused in one line exactly as a hostile JSON one is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from deuteron.formats.files import FormatError

N = TypeVar("N")


def is_msgpack_array(data: bytes) -> bool:
    """Whether ``data`` starts as a msgpack array does (a JSON file starts with ``[``)."""
    return bool(data) and (0x90 <= data[0] <= 0x9F or data[0] in (0xDC, 0xDD))


def pack(
    root: N,
    fields: Callable[[N], Mapping[str, Any]],
    children: Callable[[N], Sequence[N]],
    devices: Mapping[str, Any],
) -> bytes:
    """``[tree, devices]`` as msgpack: each node a map of its fields plus ``children``."""
    import msgpack

    packer = msgpack.Packer(use_bin_type=True, autoreset=False)
    packer.pack_array_header(2)
    stack: list[N] = [root]
    while stack:
        node = stack.pop()
        kids = children(node)
        out = fields(node)
        packer.pack_map_header(len(out) + 1)
        for key, value in out.items():  # frame and metrics: flat maps of names to scalars
            packer.pack(key)
            packer.pack(value)
        packer.pack("children")
        packer.pack_array_header(len(kids))
        stack.extend(reversed(kids))  # depth first, in order: each node's fields before its children
    packer.pack(devices)
    return bytes(packer.bytes())


def loads(data: bytes, where: str = "profile") -> Any:
    """The plain structure of a ``[tree, devices]`` msgpack document (FormatError for anything else)."""
    import msgpack

    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False, max_buffer_size=max(len(data), 1))
    unpacker.feed(data)
    try:
        if unpacker.read_array_header() < 1:
            raise FormatError(f"{where}: not a hatchet profile (expected [tree, device table])")
        tree = _read_tree(unpacker)
        devices = unpacker.unpack() if unpacker.tell() < len(data) else {}
    except FormatError:
        raise
    except Exception as exc:  # msgpack's own errors, whatever their class: one line
        what = f"{type(exc).__name__}: {exc}"
        raise FormatError(f"{where}: not a valid hatchet msgpack file ({what})") from None
    return [tree, devices]


def _read_tree(unpacker: Any) -> dict[str, Any]:
    """Nodes are maps whose ``children`` is an array of nodes; read with an explicit stack."""
    root: dict[str, Any] = {}
    # Each entry: [the node's dict, map entries left to read, children left to read in its array].
    stack: list[list[Any]] = [[root, unpacker.read_map_header(), 0]]
    while stack:
        top = stack[-1]
        node = top[0]
        if top[2] > 0:  # inside the children array: the next child node
            top[2] -= 1
            child: dict[str, Any] = {}
            node["children"].append(child)
            stack.append([child, unpacker.read_map_header(), 0])
            continue
        if top[1] == 0:
            stack.pop()
            continue
        top[1] -= 1
        key = unpacker.unpack()
        if key == "children":
            top[2] = unpacker.read_array_header()
            node["children"] = []
        else:
            node[str(key)] = unpacker.unpack()
    return root
