"""A Chrome trace (JSON) read as a stream of event batches, in bounded memory whatever its size.

Users' traces reach gigabytes (a rank of a long job; 64 ranks of 30 MB). Parsing a whole document
first holds every event as a Python dict, about ten times the file's size (a 30 MB rank trace
peaked at 270 MB), and viewers that do so stop at 1 to 10 GB. Here the file is read in chunks of
:data:`CHUNK` bytes: each chunk's complete events are parsed at once by orjson (about as fast as
parsing the whole file, but only one chunk's dicts live at a time), and the caller folds each
batch into its own compact form (columns: :mod:`deuteron.formats.trace_columns`) before the next
is read. Memory is then the chunk, one batch of dicts and what the caller keeps.

Where a chunk ends is found cheaply: the last ``}`` followed by ``,`` or ``]``, tried by parsing
the events before it. Such a cut can only parse when it falls between two events (a cut inside a
string leaves it unterminated, a cut inside a nested value leaves a bracket open), so a wrong
guess fails and is never taken. When the guess fails (a value orjson refuses, like ``Infinity``,
or a ``},`` inside nested args), :func:`_scan` walks the chunk's strings and brackets exactly,
and the batch goes through :func:`deuteron.formats.jsonio.loads`, which accepts what ``json``
does. Damage is one :class:`~deuteron.formats.FormatError` line, as for the other readers.

The document may be ``{"traceEvents": [...], ...}`` with its other keys before or after the events
(ours and Proton's write ``otherData`` first, Kineto's writers put theirs either side), or a bare
list of events; a gzipped file (Kineto's ``.json.gz``) is read through gzip. What the trace says of
itself (``otherData``, Kineto's ``distributedInfo``, ``baseTimeNanoseconds``) is kept as scalars
in :attr:`TraceStream.info`, complete once the events have been read.

No size limit applies (``DEUTERON_MAX_FILE_BYTES`` guards readers that hold a whole file): memory
does not grow with the file, only time does. One event larger than :data:`MAX_EVENT_BYTES` is
refused as damage.
"""

from __future__ import annotations

import gzip
import json
import os
import re
from collections.abc import Iterator
from typing import IO, Any

from deuteron.formats import jsonio
from deuteron.formats.files import FormatError, regular_file

CHUNK = 1 << 20  # bytes parsed at a time: as fast as 4 MiB (measured), a quarter of the dicts alive
MAX_EVENT_BYTES = 64 << 20  # one event (or header value) larger than this is damage, not data
_WS = b" \t\r\n"
# A string (escapes included), a lone quote (a string that does not end in the window), a bracket.
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|["\[\]{}]', re.DOTALL)
_INFO_KEYS = ("otherData", "distributedInfo")  # objects whose scalars say what the trace is
_INFO_SCALARS = ("baseTimeNanoseconds", "displayTimeUnit")  # top-level scalars kept the same way


def _open(path: str | os.PathLike[str]) -> IO[bytes]:
    """The file's bytes (gunzipped when it is gzip), after checking it is a regular file."""
    if regular_file(path, "Chrome trace", limited=False) == 0:
        raise FormatError(f"{path}: the file is empty")
    try:
        raw: IO[bytes] = open(path, "rb")  # noqa: SIM115 - closed by TraceStream.close
    except OSError as exc:
        raise FormatError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if raw.read(2) == b"\x1f\x8b":
        raw.seek(0)
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    raw.seek(0)
    return raw


def _scan(buf: bytes, start: int, stop: int) -> tuple[int, int]:
    """The exact walk: (end of the last complete value at the array's level, after ``start``;
    where the array closes), each -1 if not within ``buf[start:stop]``."""
    depth, last = 0, -1
    for token in _TOKEN.finditer(buf, start, stop):
        ch = token.group()
        if ch == b'"':  # a string that runs past the window
            break
        if ch[0] == 0x22:  # a whole string
            if depth == 0:
                last = token.end() - 1
            continue
        if ch in (b"{", b"["):
            depth += 1
        else:
            depth -= 1
            if depth < 0:
                return last, token.start()
            if depth == 0:
                last = token.start()
    return last, -1


class TraceStream:
    """One pass over a trace's events, a batch at a time (see the module). Use as a context
    manager, or call :meth:`close`; :meth:`batches` may be iterated once."""

    def __init__(self, path: str | os.PathLike[str], chunk: int = CHUNK) -> None:
        self.path = path
        self.chunk = chunk
        self.info: dict[str, Any] = {}
        self.events_read = 0
        self._file = _open(path)
        self._buf = b""
        self._pos = 0  # where the next unread byte is in _buf
        self._base = 0  # file offset of _buf[0]
        self._eof = False

    def __enter__(self) -> TraceStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._file.close()

    # --- bytes ---------------------------------------------------------------------------------
    def _fill(self, want: int) -> bool:
        """At least ``want`` unread bytes in the buffer, or all the file's rest; False if none are left."""
        if len(self._buf) - self._pos < want and not self._eof:
            rest = self._buf[self._pos :]
            self._base += self._pos
            try:
                more = self._file.read(max(want - len(rest), self.chunk))
            except (OSError, EOFError, gzip.BadGzipFile) as exc:
                raise FormatError(f"{self.path}: cannot read it ({exc})") from None
            self._eof = not more
            self._buf, self._pos = rest + more, 0
        return self._pos < len(self._buf)

    def _skip_ws(self) -> int:
        """The next byte that is not whitespace (-1 at the file's end), without taking it."""
        while True:
            buf, pos = self._buf, self._pos
            while pos < len(buf) and buf[pos] in _WS:
                pos += 1
            self._pos = pos
            if pos < len(buf):
                return buf[pos]
            if not self._fill(1):
                return -1

    def _expect(self, what: bytes) -> None:
        if self._skip_ws() != what[0]:
            raise self._damage(f"expected {what.decode()!r}")
        self._pos += 1

    def _damage(self, said: str) -> FormatError:
        where = self._base + self._pos
        if self._skip_ws() == -1:
            return FormatError(f"{self.path}: the trace ends early (cut while being written?)")
        return FormatError(f"{self.path}: not valid JSON near byte {where:,} ({said})")

    def _value(self) -> Any:
        """One whole JSON value (a key, or a value other than the events), however large it is
        up to :data:`MAX_EVENT_BYTES`."""
        self._skip_ws()
        decoder = json.JSONDecoder()
        want = 4096
        while True:
            self._fill(want)
            window = self._buf[self._pos : self._pos + want]
            try:
                text = window.decode("utf-8")
            except UnicodeDecodeError as exc:  # a character cut at the window's end: left for later
                if exc.start < len(window) - 3:
                    raise FormatError(f"{self.path}: not a text file (expected JSON)") from None
                text = window[: exc.start].decode("utf-8")
            try:
                value, end = decoder.raw_decode(text)
            except (json.JSONDecodeError, RecursionError, ValueError):
                if self._eof and len(self._buf) - self._pos <= want:
                    raise self._damage("a value that does not parse") from None
                if want >= MAX_EVENT_BYTES:
                    raise FormatError(
                        f"{self.path}: a value larger than {MAX_EVENT_BYTES >> 20} MB"
                    ) from None
                want *= 4
                continue
            self._pos += len(text[:end].encode("utf-8"))
            return value

    # --- the document --------------------------------------------------------------------------
    def batches(self) -> Iterator[list[Any]]:
        """The events, a list per chunk, in file order; :attr:`info` is complete after the last."""
        first = self._skip_ws()
        if first == ord("["):
            self._pos += 1
            yield from self._events()
            return
        if first != ord("{"):
            raise FormatError(f"{self.path}: not a Chrome trace (expected an object with a traceEvents list)")
        self._pos += 1
        found = False
        first = True
        while True:
            ch = self._skip_ws()
            if ch == ord("}"):
                self._pos += 1
                break
            if not first:
                if ch != ord(","):
                    raise self._damage("expected ',' or '}' between the trace's keys")
                self._pos += 1
            first = False
            key = self._value()
            if not isinstance(key, str):
                raise self._damage("an object key that is not a string")
            self._expect(b":")
            if key == "traceEvents" and not found and self._skip_ws() == ord("["):
                found = True
                self._pos += 1
                yield from self._events()
                continue
            self._keep(key, self._value())
        if not found:
            raise FormatError(f"{self.path}: not a Chrome trace (expected an object with a traceEvents list)")
        if self._skip_ws() != -1:
            raise self._damage("text after the trace's end")

    def _keep(self, key: str, value: Any) -> None:
        if key in _INFO_KEYS and isinstance(value, dict):
            self.info.update(
                {str(k)[:100]: v for k, v in value.items() if isinstance(v, (str, int, float, bool))}
            )
        elif key in _INFO_SCALARS and isinstance(value, (str, int, float)) and not isinstance(value, bool):
            self.info[key] = value

    def _events(self) -> Iterator[list[Any]]:
        """The array's elements, a batch per chunk, up to and including its closing bracket."""
        while True:
            ch = self._skip_ws()
            if ch == ord("]"):
                self._pos += 1
                return
            if ch == -1:
                raise FormatError(f"{self.path}: the trace ends early (cut while being written?)")
            batch = self._batch()
            self.events_read += len(batch)
            yield batch
            ch = self._skip_ws()
            if ch == ord(","):
                self._pos += 1
            elif ch != ord("]"):
                raise self._damage("expected ',' or ']' after an event")

    def _batch(self) -> list[Any]:
        """The complete events at the buffer's front (at least one), parsed and taken."""
        want = self.chunk
        while True:
            self._fill(want)
            buf, pos = self._buf, self._pos
            stop = min(len(buf), pos + want)
            cut = self._guess(buf, pos, stop)
            if cut is not None:
                return cut
            last, closing = _scan(buf, pos, stop)
            end = closing if closing >= 0 else last + 1
            if end > pos:
                try:
                    batch = jsonio.loads(b"[" + buf[pos:end] + b"]")
                except jsonio.NotText:
                    raise FormatError(f"{self.path}: not a text file (expected JSON)") from None
                except jsonio.JSONError as exc:
                    raise self._damage(str(exc)) from None
                self._pos = end
                return batch if isinstance(batch, list) else [batch]
            if self._eof and stop >= len(buf):
                raise FormatError(f"{self.path}: the trace ends early (cut while being written?)")
            if want >= MAX_EVENT_BYTES:
                raise FormatError(f"{self.path}: a trace event larger than {MAX_EVENT_BYTES >> 20} MB")
            want *= 4

    def _guess(self, buf: bytes, pos: int, stop: int) -> list[Any] | None:
        """The fast cut (see the module): the last ``}`` in the window followed by ``,`` or ``]``,
        taken if the events before it parse with orjson; None when there is none or it fails."""
        import orjson

        end = buf.rfind(b"}", pos, stop)
        while end > pos:
            after = end + 1
            while after < len(buf) and buf[after] in _WS:
                after += 1
            if after < len(buf) and buf[after] in b",]":
                try:
                    batch = orjson.loads(b"[" + buf[pos : end + 1] + b"]")
                except orjson.JSONDecodeError:
                    return None
                self._pos = end + 1
                return batch  # type: ignore[no-any-return]
            end = buf.rfind(b"}", pos, end)
        return None


def iter_events(path: str | os.PathLike[str], chunk: int = CHUNK) -> Iterator[tuple[int, dict[str, Any]]]:
    """Every event with its index, one at a time (for small consumers; readers of columns take
    the batches). FormatError for an element that is not an object."""
    with TraceStream(path, chunk) as stream:
        i = 0
        for batch in stream.batches():
            for ev in batch:
                if not isinstance(ev, dict):
                    raise FormatError(f"{path}: trace event {i} is not an object")
                yield i, ev
                i += 1
