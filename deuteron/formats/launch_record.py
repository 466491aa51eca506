"""``deuteron run --record-launches``: what each Triton launch needs to be reproduced, beside the profile.

``NAME.launches.npz`` (beside ``NAME.hatchet``; the profile's metadata names it under
``recorded_launches``) is a NumPy ``.npz`` read with ``np.load(f)``, which refuses pickled objects.
Format ``deuteron-launch-record`` version 1:

- ``header``: uint8, UTF-8 JSON: ``{"format", "version", "limit", "kept_bytes", "notes",
  "kernels": [{"name", "functions": [{"name", "source", "file", "line"}], "imports", "constants":
  [[name, expression]], "aliases": [[name, function]], "dropped", "notes", "constexprs"}],
  "launches": [{"kernel" (index into kernels), "number" (1-based, per kernel), "device",
  "interpreted", "grid" ([x, y, z] or null), "grid_error", "args": [[name, value]], "options":
  [[name, value]], "buffers": [...], "tuner", "error", "notes"}]}``.
- A value is ``{"kind": "int" | "bool" | "str", "value"}``, ``{"kind": "float", "value": repr}``,
  ``{"kind": "none"}``, ``{"kind": "tuple", "items"}``, ``{"kind": "tl_dtype" | "torch_dtype",
  "name"}``, ``{"kind": "unsupported", "type"}``, or ``{"kind": "tensor", "buffer", "shape",
  "strides", "offset"}``: a view of one of the launch's buffers, ``offset`` elements from its start.
- A buffer is the stretch of one storage that the launch's tensors of one dtype view: ``{"name",
  "dtype", "bits", "start" (its first element in the storage), "size" (elements), "pad" (elements
  before it to its 16-byte alignment), "before", "after" (the arrays holding its values before and
  after the launch, or null), "written", "stats"}``; ``stats`` (``min``, ``max``, ``mean``, ``std``,
  ``nonfinite``) stand in for ``before`` past the byte limit.
- ``a0``, ``a1``, ...: the values, one 1-D array each (``bits`` names the NumPy dtype of those
  torch has and NumPy has not: bfloat16 as int16, float8 as uint8); launches share equal arrays.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from deuteron.formats import FormatError, npz_record
from deuteron.formats.files import atomic_open, regular_file

FORMAT = "deuteron-launch-record"
VERSION = 1
SUFFIX = ".launches.npz"
METADATA_KEY = "recorded_launches"  # what a profile's metadata calls its record: {"file", counts}
# torch's dtypes by name, and the NumPy dtype their values are kept as
DTYPES = {
    "float16": "float16", "float32": "float32", "float64": "float64", "bfloat16": "int16",
    "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64", "uint8": "uint8",
    "uint16": "uint16", "uint32": "uint32", "uint64": "uint64", "bool": "bool",
    "complex64": "complex64", "complex128": "complex128", "float8_e4m3fn": "uint8",
    "float8_e5m2": "uint8", "float8_e4m3fnuz": "uint8", "float8_e5m2fnuz": "uint8",
}  # fmt: skip
KINDS = {"int", "bool", "str", "float", "none", "tuple", "tl_dtype", "torch_dtype", "unsupported", "tensor"}
IMPORT = re.compile(r"(import [\w.]+( as \w+)?|from [\w.]+ import \w+( as \w+)?)")
_MEMBER = re.compile(r"(header|a\d{1,9})\.npy")
_savez: Any = np.savez  # its stub types every keyword as allow_pickle's bool


def path_beside(profile: str | Path) -> Path:
    """``run.hatchet`` -> ``run.launches.npz``, in the profile's folder."""
    p = Path(profile)
    stem = p.name
    for suffix in (".hatchet_stream", ".hatchet_msgpack", ".hatchet"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    return p.with_name(stem + SUFFIX)


def write(header: dict[str, Any], arrays: dict[str, np.ndarray], path: str | Path) -> Path:
    """Write a record atomically (uncompressed: values rarely shrink, and time is the run's)."""
    full = {"format": FORMAT, "version": VERSION, **header}
    with atomic_open(path, "wb") as f:
        _savez(f, header=np.frombuffer(json.dumps(full).encode(), dtype=np.uint8), **arrays)
    return Path(path)


def write_arrays(arrays: dict[str, np.ndarray], path: str | Path) -> Path:
    """A reproducer's values: plain named arrays (``np.load(f)[name]``), written atomically."""
    with atomic_open(path, "wb") as f:
        _savez(f, **arrays)
    return Path(path)


class LaunchFile:
    """A record, opened: its checked header, and its arrays read one at a time when asked for."""

    def __init__(self, path: Path, header: dict[str, Any], members: set[str]) -> None:
        self.path, self.header, self.members = path, header, members

    def array(self, name: str, size: int, dtype: str) -> np.ndarray:
        """Array ``name``, which must hold ``size`` values of NumPy dtype ``dtype``."""
        bad = f"{self.path} is damaged"
        if f"{name}.npy" not in self.members:
            raise FormatError(f"{bad}: it has no array {name!r}")
        try:
            with np.load(self.path, allow_pickle=False) as data:
                values = data[name]
        except Exception as exc:  # zipfile, zlib and NumPy on hostile bytes
            raise FormatError(f"{bad} ({type(exc).__name__}: {str(exc)[:200]})") from None
        if values.ndim != 1 or values.size != size or values.dtype != np.dtype(dtype):
            raise FormatError(
                f"{bad}: array {name} is {values.dtype}{list(values.shape)}, not {dtype}[{size}]"
            )
        return values


def read(path: str | Path) -> LaunchFile:
    """Open a record; FormatError (one line) if it is not one. Hostile files are expected: the
    members, their inflated size (before anything is inflated), and the header's every field."""
    path = Path(path)
    regular_file(path, "deuteron launch record")
    bad = f"{path} is not a deuteron launch record"
    members = npz_record.checked_members(
        path, bad, lambda names: "header.npy" in names and all(_MEMBER.fullmatch(m) for m in names)
    )
    (raw,) = npz_record.load_arrays(path, bad, ["header"])
    header = npz_record.json_header(raw, bad, FORMAT)
    version = header.get("version")
    if not isinstance(version, int) or not _int(version, 1) or version > VERSION:
        raise FormatError(f"{bad}: version {version!r} (this Deuteron reads up to {VERSION})")
    _check(header, f"{path} is damaged")
    return LaunchFile(path, header, members)


def _int(value: Any, low: int = 0, high: int = 1 << 62) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _strs(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _name(value: Any) -> bool:
    return isinstance(value, str) and value.isidentifier()


def _check(header: dict[str, Any], bad: str) -> None:
    kernels, launches = header.get("kernels"), header.get("launches")
    if not isinstance(kernels, list) or not isinstance(launches, list) or not _strs(header.get("notes", [])):
        raise FormatError(f"{bad}: no kernels and launches")
    for i, k in enumerate(kernels):
        if not (isinstance(k, dict) and _name(k.get("name")) and _kernel_ok(k)):
            raise FormatError(f"{bad}: kernel {i}")
    for i, launch in enumerate(launches):
        if not isinstance(launch, dict) or not _int(launch.get("kernel"), 0, len(kernels) - 1):
            raise FormatError(f"{bad}: launch {i} names no kernel")
        grid = launch.get("grid")
        if not (grid is None or isinstance(grid, list) and len(grid) == 3 and all(_int(g) for g in grid)):
            raise FormatError(f"{bad}: the grid of launch {i}")
        buffers = launch.get("buffers")
        if not isinstance(buffers, list) or not all(_buffer_ok(b) for b in buffers):
            raise FormatError(f"{bad}: the buffers of launch {i}")
        args, options = launch.get("args"), launch.get("options", [])
        if not (
            _int(launch.get("number"), 1) and isinstance(args, list) and isinstance(options, list)
        ) or not all(
            isinstance(p, list) and len(p) == 2 and _name(p[0]) and _value_ok(p[1], len(buffers))
            for p in [*args, *options]
        ):
            raise FormatError(f"{bad}: the arguments of launch {i}")
        if not all(isinstance(launch.get(k, ""), str) for k in ("device", "grid_error", "error")):
            raise FormatError(f"{bad}: launch {i}")


def _kernel_ok(k: dict[str, Any]) -> bool:
    functions = k.get("functions")
    return (
        isinstance(functions, list)
        and bool(functions)
        and all(
            isinstance(f, dict) and _name(f.get("name")) and isinstance(f.get("source"), str)
            for f in functions
        )
        and _strs(k.get("imports"))
        and all(IMPORT.fullmatch(line) for line in k["imports"])
        and all(
            isinstance(p, list) and len(p) == 2 and _name(p[0]) and isinstance(p[1], str)
            for p in [*k.get("constants", []), *k.get("aliases", [])]
        )
        and all(_name(p[1]) for p in k.get("aliases", []))
        and _strs(k.get("dropped", []))
        and _strs(k.get("notes", []))
        and _strs(k.get("constexprs", []))
    )


def _buffer_ok(b: Any) -> bool:
    if not isinstance(b, dict) or not _name(b.get("name")) or b.get("dtype") not in DTYPES:
        return False
    arrays_ok = all(
        b.get(k) is None or isinstance(b[k], str) and _MEMBER.fullmatch(b[k] + ".npy")
        for k in ("before", "after")
    )
    stats = b.get("stats")
    stats_ok = (
        stats is None
        or isinstance(stats, dict)
        and all(
            isinstance(stats.get(k), (int, float)) and not isinstance(stats.get(k), bool)
            for k in ("min", "max", "mean", "std")
        )
    )
    return arrays_ok and stats_ok and all(_int(b.get(k)) for k in ("start", "size", "pad"))


def _value_ok(value: Any, buffers: int) -> bool:
    """A value's shape, without recursion (a hostile file may nest a tuple a million deep)."""
    todo = [value]
    while todo:
        v = todo.pop()
        if not isinstance(v, dict) or v.get("kind") not in KINDS or len(todo) > 10_000:
            return False
        if v["kind"] == "tuple" and isinstance(v.get("items"), list):
            todo.extend(v["items"])
        elif not _leaf_ok(v, buffers):
            return False
    return True


_LEAVES = {
    "int": lambda v: _int(v.get("value"), -(1 << 64), 1 << 64),
    "float": lambda v: _float_text(v.get("value")),
    "bool": lambda v: isinstance(v.get("value"), bool),
    "str": lambda v: isinstance(v.get("value"), str),
    "tl_dtype": lambda v: _name(v.get("name")),
    "torch_dtype": lambda v: _name(v.get("name")),
    "none": lambda v: True,
    "unsupported": lambda v: True,
}


def _leaf_ok(v: dict[str, Any], buffers: int) -> bool:
    if v["kind"] != "tensor":
        check = _LEAVES.get(v["kind"])
        return check is not None and bool(check(v))
    shape, strides = v.get("shape"), v.get("strides")
    return (
        _int(v.get("buffer"), 0, buffers - 1)
        and _int(v.get("offset"))
        and isinstance(shape, list)
        and isinstance(strides, list)
        and len(shape) == len(strides)
        and all(_int(n) for n in [*shape, *strides])
    )


def _float_text(text: Any) -> bool:
    try:
        float(text)
    except (TypeError, ValueError):
        return False
    return isinstance(text, str)
