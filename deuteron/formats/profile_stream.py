"""A profile written while its run goes on: ``NAME.hatchet_stream``, one record per flush.

A run of hours, or a serving process that ends with SIGKILL, must not lose its profile at the end.
So with ``deuteron run --flush-every`` each completed stretch of the run (a phase: so many steps or
seconds) is appended to this file as one record and dropped from memory; a run that finishes
writes its usual ``NAME.hatchet`` from the records and removes the stream; a run that is killed
leaves the stream, and ``deuteron view NAME.hatchet_stream`` reads every complete record, the
last one cut mid-write left out and said.

The file is a sequence of msgpack maps, each appended whole and followed by ``fsync``:

- the header, first: ``{"format": "deuteron-profile-stream", "version": 1, "metadata": {...}}``
  (the run's metadata as it started);
- then one record per flush: ``{"phase": N, "end_time": seconds since the epoch, "tree": bytes,
  "trace": bytes or nil}``. ``tree`` is the phase's hatchet document in msgpack (the tree of that
  stretch only, values from zero), ``trace`` its Chrome trace text when the run writes a trace.

msgpack frames itself, so a reader needs no index and a record cut anywhere is recognised as
incomplete. Appending never rewrites what is on disk: a flush costs the phase's size, not the run's.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from deuteron.formats import hatchet, jsonio, msgpack_tree
from deuteron.formats.files import FormatError, regular_file
from deuteron.model.tree import Profile
from deuteron.model.tree_ops import merge

FORMAT = "deuteron-profile-stream"
VERSION = 1
SUFFIX = ".hatchet_stream"
# msgpack of a map whose first key is "format": what the file's first bytes look like
_HEAD = b"\x83\xa6format"


def is_stream(data: bytes) -> bool:
    """Whether ``data`` starts as a profile stream does."""
    return data.startswith(_HEAD)


class StreamWriter:
    """Appends a run's flushes to its stream file; the header is written when the file is opened.

    Each record is written whole with one ``write`` and made durable with ``fsync`` before the next
    stretch of the run, so a SIGKILL (or a power cut) costs at most the record being written."""

    def __init__(self, path: Path, metadata: dict[str, Any]) -> None:
        import msgpack

        self.path = path
        self.records = 0
        self._pack = msgpack.Packer(use_bin_type=True, default=str).pack
        self._file: IO[bytes] | None = open(path, "wb")  # noqa: SIM115 - open for the run's length
        self._append({"format": FORMAT, "version": VERSION, "metadata": metadata})

    def append(self, phase: int, end_time: float, tree: bytes, trace: bytes | None) -> None:
        """One flushed phase: its tree (hatchet msgpack) and, if the run writes one, its trace."""
        self._append({"phase": phase, "end_time": end_time, "tree": tree, "trace": trace})
        self.records += 1

    def _append(self, record: dict[str, Any]) -> None:
        if self._file is None:
            raise ValueError(f"{self.path}: the stream is closed")
        self._file.write(self._pack(record))
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self, remove: bool = False) -> None:
        """Close the file (and remove it when the run's whole profile was written from it)."""
        if self._file is not None:
            self._file.close()
            self._file = None
        if remove:
            self.path.unlink(missing_ok=True)


@dataclass
class Flush:
    """One record read back: the phase's number, when it was flushed, and its tree."""

    phase: int
    end_time: float
    tree: Profile


@dataclass
class Stream:
    """A stream file read back: the run's metadata, every complete record, and the bytes at the end
    that did not make a whole record (a flush cut mid-write: the run was killed while writing)."""

    metadata: dict[str, Any]
    flushes: list[Flush] = field(default_factory=list)
    cut_bytes: int = 0

    def profile(self) -> Profile:
        """Every flushed phase as one tree (values summed on the same frames), with the run's
        metadata and how the stream ended (``stream``: flushes, the last flush's time, bytes cut)."""
        whole = merge(f.tree for f in self.flushes) if self.flushes else Profile()
        if self.flushes:
            whole.kinds = {**self.flushes[0].tree.kinds, **whole.kinds}
        last = self.flushes[-1].end_time if self.flushes else None
        whole.metadata = {
            **self.metadata,
            "stream": {"flushes": len(self.flushes), "last_flush_time": last, "cut_bytes": self.cut_bytes},
        }
        return whole


def read_profile(path: str | os.PathLike[str]) -> Profile:
    """A profile file of any kind a run writes: hatchet JSON or msgpack, or a run's stream (the
    tree its flushes add up to, see :meth:`Stream.profile`)."""
    regular_file(path, "profile")  # never open a FIFO or a device to sniff it: it may block
    try:
        with open(path, "rb") as f:
            head = f.read(len(_HEAD))
    except OSError:  # hatchet's reader says why, in one line
        head = b""
    if is_stream(head):
        return read(path).profile()
    return hatchet.read(path)


def read(path: str | os.PathLike[str]) -> Stream:
    """Read a stream file, a record at a time (memory: the trees, not the file; a record's trace is
    read again by :func:`write_combined_trace` when needed); hostile or foreign input fails in one
    FormatError line, a record cut at the end is counted in ``cut_bytes``, never an error."""
    regular_file(path, "profile")
    with open(path, "rb") as f:
        return _stream(f, str(path))


def parse(data: bytes, where: str) -> Stream:
    """A stream from its bytes (see :func:`read`)."""
    return _stream(io.BytesIO(data), where)


def _stream(f: IO[bytes], where: str) -> Stream:
    stream: Stream | None = None
    for number, record, cut in _records(f, where):
        if stream is None:
            stream = _header(record, where)
        elif record is None:
            stream.cut_bytes = cut
        else:
            stream.flushes.append(_flush(record, where, number))
    if stream is None:
        raise FormatError(f"{where}: a profile stream cut before its header ended")
    return stream


def _records(f: IO[bytes], where: str) -> Iterator[tuple[int, Any, int]]:
    """(number, record, 0) for each whole record (the header is number 0), then (number, None,
    bytes left) if the file ends inside a record."""
    import msgpack

    unpacker = msgpack.Unpacker(f, raw=False, strict_map_key=False, max_buffer_size=1 << 31)
    number = 0
    while True:
        start = unpacker.tell()
        try:
            record = unpacker.unpack()
        except msgpack.OutOfData:
            end = f.seek(0, os.SEEK_END)
            if end > start:
                if number == 0:
                    raise FormatError(f"{where}: a profile stream cut before its header ended") from None
                yield number, None, end - start
            return
        except (ValueError, TypeError, msgpack.ExtraData) as exc:
            what = "not a profile stream" if number == 0 else f"record {number} is damaged"
            raise FormatError(f"{where}: {what} ({exc})") from None
        yield number, record, 0
        number += 1


def _header(header: Any, where: str) -> Stream:
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise FormatError(f"{where}: not a profile stream (no {FORMAT} header)")
    if header.get("version") != VERSION:
        raise FormatError(f"{where}: profile stream version {header.get('version')!r}; this reads {VERSION}")
    metadata = header.get("metadata")
    return Stream(metadata if isinstance(metadata, dict) else {})


def _flush(record: Any, where: str, number: int) -> Flush:
    """One record checked: a map with a whole number phase, a time, a tree and maybe a trace."""
    if not isinstance(record, dict):
        raise FormatError(f"{where}: record {number} is not a map")
    phase, end_time, tree, trace = (record.get(k) for k in ("phase", "end_time", "tree", "trace"))
    if not isinstance(phase, int) or isinstance(phase, bool) or not isinstance(end_time, (int, float)):
        raise FormatError(f"{where}: record {number} has no phase number or time")
    if not isinstance(tree, bytes) or (trace is not None and not isinstance(trace, bytes)):
        raise FormatError(f"{where}: record {number} holds no tree")
    named = f"{where} record {number}"
    profile = hatchet.from_json(msgpack_tree.loads(tree, named), named)
    return Flush(phase, float(end_time), profile)


def write_combined_trace(path: str | os.PathLike[str], out: IO[str]) -> int:
    """The stream's flushed Chrome traces as one, written to ``out`` a phase at a time: their events
    in order on the first phase's time origin (each phase's ``otherData.zero_ns`` says where its
    ``ts`` 0 lies), each lane's name once, and the first phase's ``otherData`` and base time (the
    run's clock and job). A phase's events are read as a stream (:mod:`.trace_stream`), so memory
    is one phase's text and a batch of its events, not a parsed phase (a 200 MB phase parsed whole
    took 3 GB). Returns the events written."""
    from deuteron.formats.trace_stream import TraceStream

    seen_meta: set[str] = set()
    zero: int | None = None
    written = 0
    folder = os.path.dirname(os.path.abspath(path))
    with open(path, "rb") as f:
        for number, record, _ in _records(f, str(path)):
            text = record.get("trace") if number and isinstance(record, dict) else None
            if not isinstance(text, bytes):
                continue
            head = _trace_head(text)
            other = head.get("otherData")
            here = other.get("zero_ns") if isinstance(other, dict) else None
            if zero is None:
                zero = here if isinstance(here, int) else 0
                opening = json.dumps(head, separators=(",", ":"))[:-1]
                out.write(opening + (',"traceEvents":[' if head else '"traceEvents":['))
            shift = (here - zero) / 1e3 if isinstance(here, int) else 0.0
            with tempfile.NamedTemporaryFile(dir=folder, prefix=".phase.", suffix=".json") as phase:
                phase.write(text)
                phase.flush()
                del text, record
                with TraceStream(phase.name) as events:
                    for batch in events.batches():
                        for event in batch:
                            if not isinstance(event, dict):
                                continue
                            if event.get("ph") == "M":
                                key = json.dumps(event, sort_keys=True)
                                if key in seen_meta:
                                    continue
                                seen_meta.add(key)
                            elif shift and isinstance(event.get("ts"), (int, float)):
                                event["ts"] = event["ts"] + shift
                            out.write(("," if written else "") + json.dumps(event, separators=(",", ":")))
                            written += 1
    if zero is None:
        out.write('{"traceEvents":[')
    out.write("]}")
    return written


def _trace_head(text: bytes) -> dict[str, Any]:
    """A phase trace's keys other than its events (our writer puts ``traceEvents`` last)."""
    at = text.find(b'"traceEvents":')
    if at < 0:
        return {}
    head = jsonio.loads(text[:at].rstrip().rstrip(b",") + b"}")
    return head if isinstance(head, dict) else {}
