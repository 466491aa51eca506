"""A rank's collectives, from torch's own record of them: its Flight Recorder (c10d keeps, per
process, the last N collective calls of every process group: the operation, the group, the call's
sequence number in that group, the tensors' sizes and dtypes, when the call was made, and, with
``TORCH_NCCL_ENABLE_TIMING=1``, how long NCCL took).

In a rank of a job (see :mod:`deuteron.collect.job`) the recorder is turned on when profiling
starts (``TORCH_FR_BUFFER_SIZE``, and its older NCCL name, unless the program set them): it has to
be on before the program creates its process groups, so ``deuteron run`` gets every call and a
``deuteron.start()`` made after ``init_process_group`` gets none. At the end its record goes into
the rank's file (metadata ``collectives``, one column per field, and ``collective_groups``: each
process group's number of ranks, where the recorder lists them), where ``deuteron view
NAME.rank*.hatchet --advise`` matches each call across the ranks by group and sequence number.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from typing import Any

from deuteron.collect import job

BUFFER_SIZE = "20000"  # calls kept per process (the recorder's ring): about 10 MB at most
BUFFER_VARIABLES = ("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE")  # torch >= 2.7, and before


def _buffer_variable() -> str:
    """The variable this torch reads (torch 2.7 renamed it, and warns on every rank when the old
    one is set): read from the installed torch's version, without importing torch."""
    from importlib import metadata

    try:
        major, minor = (int(part) for part in metadata.version("torch").split(".")[:2])
    except (metadata.PackageNotFoundError, ValueError):
        return BUFFER_VARIABLES[0]
    return BUFFER_VARIABLES[0] if (major, minor) >= (2, 7) else BUFFER_VARIABLES[1]


# Bytes per element of the dtypes c10d names (ScalarType's names)
DTYPE_BYTES = {
    "Double": 8, "Long": 8, "ComplexFloat": 8, "ComplexDouble": 16,
    "Float": 4, "Int": 4, "UInt32": 4,
    "Half": 2, "BFloat16": 2, "Short": 2, "UInt16": 2,
    "Byte": 1, "Char": 1, "Bool": 1, "Float8_e4m3fn": 1, "Float8_e5m2": 1, "Float8_e4m3fnuz": 1,
    "Float8_e5m2fnuz": 1, "Float8_e8m0fnu": 1,
}  # fmt: skip
COLUMNS = ("group", "seq", "op", "in_bytes", "out_bytes", "dtype", "created_ns", "duration_ms", "p2p")


def prepare() -> None:
    """In a rank of a job, turn torch's Flight Recorder on for the process groups made from now on."""
    if job.current().rank is None:
        return
    if not any(variable in os.environ for variable in BUFFER_VARIABLES):  # the user's choice stands
        os.environ[_buffer_variable()] = BUFFER_SIZE


def read() -> dict[str, Any]:
    """``{"collectives": columns}`` of the calls the recorder kept, or {} (no torch.distributed, no
    recorder in this torch, nothing recorded, not a rank of a job)."""
    if "torch.distributed" not in sys.modules or job.current().rank is None:
        return {}
    c10d = getattr(getattr(sys.modules.get("torch"), "_C", None), "_distributed_c10d", None)
    # Two recorders: NCCL's calls (CUDA events: their durations) in one, every other backend's
    # (gloo's) in the other; seen on torch 2.11, where each dump holds only its own.
    entries: list[Any] = []
    groups: dict[str, int] = {}
    for name in ("_dump_nccl_trace_json", "_dump_fr_trace_json"):
        dump = getattr(c10d, name, None)
        if dump is None:
            continue
        try:
            document = json.loads(dump(True, False))
            entries.extend(document.get("entries") or [])
            groups.update(group_sizes(document.get("pg_config")))
        except Exception:  # the recorder's own failure must not cost the profile
            continue
    if not entries:
        return {}
    columns: dict[str, list[Any]] = {name: [] for name in COLUMNS}
    for e in entries:
        group = e.get("process_group") or ["", ""]
        dtypes = e.get("input_dtypes") or e.get("output_dtypes") or [""]
        columns["group"].append(str(group[0]) if group else "")
        columns["seq"].append(int(e.get("p2p_seq_id") if e.get("is_p2p") else e.get("collective_seq_id", -1)))
        columns["op"].append(str(e.get("profiling_name", "")))
        columns["in_bytes"].append(_bytes(e.get("input_sizes"), e.get("input_dtypes")))
        columns["out_bytes"].append(_bytes(e.get("output_sizes"), e.get("output_dtypes")))
        columns["dtype"].append(str(dtypes[0]) if dtypes else "")
        columns["created_ns"].append(int(e.get("time_created_ns", 0)))
        duration = e.get("duration_ms")
        columns["duration_ms"].append(float(duration) if isinstance(duration, (int, float)) else None)
        columns["p2p"].append(bool(e.get("is_p2p", False)))
    out: dict[str, Any] = {"collectives": columns}
    if groups:
        out["collective_groups"] = groups
    return out


def group_sizes(config: Any) -> dict[str, int]:
    """Each process group's number of ranks, from the recorder's ``pg_config`` (``{name: {"ranks":
    "[0, 1]", ...}}``; NCCL's groups list their ranks, gloo's dump says none): the n of NCCL's bus
    factor, which the job's world size is only for the default group."""
    out: dict[str, int] = {}
    for name, group in (config or {}).items() if isinstance(config, dict) else ():
        ranks = group.get("ranks") if isinstance(group, dict) else None
        count = len(re.findall(r"\d+", ranks)) if isinstance(ranks, str) else None
        if isinstance(ranks, list):
            count = len(ranks)
        if count:
            out[str(name)] = count
    return out


def _bytes(sizes: Any, dtypes: Any) -> int:
    """The tensors' bytes: each shape's elements times its dtype's size (0 for an unknown dtype)."""
    total = 0
    for i, shape in enumerate(sizes or []):
        dtype = dtypes[i] if dtypes and i < len(dtypes) else ""
        total += math.prod(int(d) for d in shape) * DTYPE_BYTES.get(str(dtype), 0)
    return total
