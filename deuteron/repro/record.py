"""Recording launches so that any one can be rerun alone: ``deuteron run --record-launches``.

Each Triton launch is heard just before it runs (:mod:`deuteron.triton.runtime.launch_capture`).
A :class:`Recorder` keeps what a reproducer needs: the kernel's sources (once per kernel,
:mod:`deuteron.triton.runtime.kernel_source`), the arguments (:mod:`.values`), the values of every
tensor it is given, copied to the host *before* it runs (inputs as the kernel saw them), and just
after it runs, the values of those it changed (its outputs, for ``repro.py --check``).

Values are kept up to a byte limit for the whole run (``DEUTERON_RECORD_BYTES``, default 64 MiB;
equal arrays are kept once); past it, a buffer keeps its statistics instead (min, max, mean, std:
a reproducer makes values like them) and its values after the launch are not kept. The copies
and statistics are the recorder's work, not the program's: they run in Proton's launch-metadata
state, whose frames every view leaves out, and unseen by ``-c torch``.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from deuteron.collect.context.state import metadata_state
from deuteron.collect.context.torch.unobserved import unobserved
from deuteron.formats import launch_record
from deuteron.formats.files import check_writable
from deuteron.repro.errors import ReproError
from deuteron.repro.values import Buffer, Buffers, describe, is_tensor, statistics, to_numpy
from deuteron.triton.runtime import launch_capture
from deuteron.triton.runtime.kernel_source import kernel_source

LIMIT_ENV = "DEUTERON_RECORD_BYTES"
DEFAULT_LIMIT = 64 << 20


def byte_limit() -> int:
    """``DEUTERON_RECORD_BYTES`` (a whole number of bytes, 0 keeps statistics only), else 64 MiB."""
    text = os.environ.get(LIMIT_ENV, "").strip().replace("_", "")
    if not text:
        return DEFAULT_LIMIT
    if not text.isdigit():
        raise ReproError(f"{LIMIT_ENV} must be a whole number of bytes, not {text!r}")
    return int(text)


class Recorder:
    """The launches of one run, as :mod:`deuteron.formats.launch_record` writes them (see the
    module's text). Launches from several threads are recorded one at a time."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = byte_limit() if limit is None else limit
        self.kept = 0
        self.kernels: list[dict[str, Any]] = []
        self.launches: list[dict[str, Any]] = []
        self.arrays: dict[str, np.ndarray] = {}
        self.notes: list[str] = []
        self._kernel_index: dict[int, int] = {}
        self._alive: list[Any] = []  # the kernels, so that their ids stay theirs
        self._by_hash: dict[tuple[str, int, bytes], str] = {}
        self._counts: dict[str, int] = {}
        self._lock = threading.RLock()

    def on_launch(self, launch: launch_capture.Launch) -> launch_capture.After:
        """Record one launch before it runs; returns what records its outputs after it."""
        with self._lock:
            kernel = self._kernel(launch)
            buffers = Buffers()
            with metadata_state(), unobserved():
                args = [[n, describe(v, buffers, n)] for n, v in launch.args.items()]
                options = [
                    [n, describe(v, buffers, n)] for n, v in launch.options.items() if not is_tensor(v)
                ]
                buffers.finish()
                entries = [b.entry() for b in buffers.buffers]
                befores = [self._before(b, e) for b, e in zip(buffers.buffers, entries, strict=True)]
            number = self._counts[launch.name] = self._counts.get(launch.name, 0) + 1
            devices = [b.tensor.device.type for b in buffers.buffers]
            record = {
                "kernel": kernel, "number": number,
                "device": "cuda" if "cuda" in devices else (devices[0] if devices else "cpu"),
                "interpreted": launch.interpreted, "grid": list(launch.grid) if launch.grid else None,
                "grid_error": launch.grid_error, "args": args, "options": options, "buffers": entries,
                "tuner": launch.tuner, "error": "", "notes": [],
            }  # fmt: skip
            self.launches.append(record)

        def after(error: str) -> None:
            record["error"] = error
            if not error:
                with self._lock, metadata_state(), unobserved():
                    self._after(buffers.buffers, entries, befores, record)

        return after

    def _kernel(self, launch: launch_capture.Launch) -> int:
        index = self._kernel_index.get(id(launch.kernel))
        if index is not None:
            return index
        source = kernel_source(launch.kernel)
        if not source.functions:
            raise ValueError("; ".join(source.notes) or "no source")
        entry = asdict(source)
        entry["constants"] = [list(c) for c in source.constants]
        entry["aliases"] = [list(a) for a in source.aliases]
        entry["constexprs"] = list(launch.constexprs)
        self._alive.append(launch.kernel)
        self.kernels.append(entry)
        index = self._kernel_index[id(launch.kernel)] = len(self.kernels) - 1
        return index

    def _before(self, buffer: Buffer, entry: dict[str, Any]) -> np.ndarray | None:
        """Keep the buffer's values (or, past the limit, its statistics); the values, or None."""
        region = buffer.region()
        if self.kept + entry["size"] * int(buffer.tensor.element_size()) <= self.limit:
            values = to_numpy(region)
            entry["before"] = self._store(values)
            if entry["before"] is not None:
                return values
        entry["stats"] = statistics(region)
        return None

    def _after(
        self,
        buffers: list[Buffer],
        entries: list[dict[str, Any]],
        befores: list[np.ndarray | None],
        record: dict[str, Any],
    ) -> None:
        """Which buffers the launch changed, and their values now (within the limit)."""
        for buffer, entry, before in zip(buffers, entries, befores, strict=True):
            if before is None:
                continue
            now = to_numpy(buffer.region())
            entry["written"] = not np.array_equal(before.view(np.uint8), now.view(np.uint8))
            if entry["written"]:
                entry["after"] = self._store(now)
                if entry["after"] is None:
                    record["notes"].append(
                        f"{entry['name']}: its values after the launch are past the byte limit"
                    )

    def _store(self, values: np.ndarray) -> str | None:
        """The array's name in the record (equal arrays share one); None past the byte limit."""
        digest = hashlib.blake2b(values.view(np.uint8).data, digest_size=20).digest()
        key = (values.dtype.str, values.size, digest)
        name = self._by_hash.get(key)
        if name is not None:
            return name
        if self.kept + values.nbytes > self.limit:
            return None
        name = self._by_hash[key] = f"a{len(self.arrays)}"
        self.arrays[name] = values
        self.kept += values.nbytes
        return name

    def header(self) -> dict[str, Any]:
        notes = [*launch_capture.problems(), *self.notes]
        return {"limit": self.limit, "kept_bytes": self.kept, "notes": notes, "kernels": self.kernels,
                "launches": self.launches}  # fmt: skip

    def write(self, path: str | Path) -> Path:
        """Write the record (see :mod:`deuteron.formats.launch_record`)."""
        with self._lock:
            return launch_record.write(self.header(), self.arrays, path)

    def summary(self) -> dict[str, Any]:
        """What the profile's metadata says of the record (``recorded_launches``)."""
        return {"launches": len(self.launches), "kernels": len(self.kernels), "kept_bytes": self.kept}


def path_beside(hatchet: Path) -> Path:
    """Where ``deuteron run --record-launches`` writes (``NAME.launches.npz``), checked before the
    program runs, with the byte limit."""
    byte_limit()
    return check_writable(launch_record.path_beside(hatchet), "--record-launches")


def finish(recorder: Recorder | None, path: Path | None, metadata: dict[str, Any]) -> list[Path]:
    """Stop recording and write the record, named in the profile's ``metadata`` (nothing is written
    when no launch was recorded: an earlier record beside an earlier profile stays its)."""
    if recorder is None or path is None:
        return []
    stop()
    if not recorder.launches:
        return []
    written = recorder.write(path)
    metadata[launch_record.METADATA_KEY] = {"file": path.name, **recorder.summary()}
    return [written]


def start(limit: int | None = None) -> Recorder:
    """Record every launch from now on (imports Triton); :func:`stop` ends it."""
    recorder = Recorder(limit)
    launch_capture.start(recorder.on_launch)
    return recorder


def stop() -> None:
    launch_capture.stop()


@contextmanager
def recording(limit: int | None = None) -> Iterator[Recorder]:
    """``with recording() as r:`` records the launches the block makes; ``r.write(path)`` after."""
    recorder = start(limit)
    try:
        yield recorder
    finally:
        stop()
