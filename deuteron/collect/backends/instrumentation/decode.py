"""Decoding the profile buffers that instrumented kernels write (Triton 3.6's Proton lowering).

Each CTA owns ``scratch_size`` bytes of the launch's profile buffer and writes it when it finishes:

    word 0       0xdeadbeef (the preamble)
    word 1       the CTA's linear id            word 2   the SM it ran on
    word 3       buf_size: bytes of events that follow the header, all units together
    words 4-9    three 64-bit global-timer readings (ns since the epoch): the CTA's start, and
                 before and after it copied its events out (finalization)
    words 10..   one count per unit of the CTA (all ``total_units``, sampled or not): words written
    then         one segment per *sampled* unit (``buf_size / len(uids)`` bytes each), a circular
                 buffer of 8-byte entries: a tag word (bit 31: end, bits 23-30: scope id, bits 0-10:
                 clock bits 32-42) and the clock's low 32 bits

A unit that wrote more than its segment holds kept its last entries (circular strategy); the entry
to be overwritten next, ``(count / 2) % capacity``, is the oldest. Everything here treats a buffer
as hostile: a CTA whose preamble or sizes are wrong is skipped and counted, an end without its start
is skipped and counted, never raised, so a damaged buffer gives a smaller result and a reason.

Proton's host-side file (``InstrumentationHook.host_buffer``) prefixes the CTAs with a header of ten
32-bit words and the sampled unit ids; :func:`read_host_buffer` reads that form, which is also how
the test fixtures recorded on a GPU are stored.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

PREAMBLE = 0xDEADBEEF
CTA_HEADER_WORDS = 10
ENTRY_BYTES = 8
HOST_HEADER_WORDS = 10
HOST_VERSION = 1


class BufferError(ValueError):
    """A profile buffer that cannot be read at all (its outer header is wrong); one line."""


@dataclass
class Layout:
    """What decoding needs to know of the kernel that wrote a buffer."""

    scratch_size: int  # bytes per CTA (the compiled kernel's profile_scratch_size)
    total_units: int  # units per CTA that keep a count (warps, for every granularity in 3.6)
    uids: list[int]  # the units that have a segment, in order


@dataclass
class Decoded:
    """The spans of one buffer: one row per completed scope instance, plus per-CTA facts.

    ``cycles`` are the SM's clock (each SM its own counter); ``init_ns`` etc. are the GPU's global
    timer, the same for every SM, which is what puts CTAs of different SMs on one clock."""

    cta: np.ndarray  # row -> index into the per-CTA arrays below
    unit: np.ndarray
    scope: np.ndarray
    start_cycle: np.ndarray
    end_cycle: np.ndarray
    cta_id: np.ndarray  # per CTA
    sm: np.ndarray
    init_ns: np.ndarray
    pre_final_ns: np.ndarray
    post_final_ns: np.ndarray
    dropped_entries: int = 0  # entries overwritten in full circular buffers (their last ones were kept)
    unmatched: int = 0  # starts without an end, or ends without a start
    bad_ctas: int = 0  # CTAs skipped: wrong preamble or sizes
    problems: list[str] = field(default_factory=list)  # one line each, the first few

    def complain(self, text: str) -> None:
        if len(self.problems) < 5:
            self.problems.append(text)


def _empty(n_ctas: int = 0) -> Decoded:
    z = np.zeros(0, np.int64)

    def per_cta() -> np.ndarray:
        return np.zeros(n_ctas, np.int64)

    return Decoded(z, z, z, z, z, per_cta(), per_cta(), per_cta(), per_cta(), per_cta())


def decode(payload: bytes | memoryview | np.ndarray, num_ctas: int, layout: Layout) -> Decoded:
    """Every CTA's scope spans in ``payload`` (``num_ctas`` slots of ``layout.scratch_size`` bytes).

    Vectorised over CTAs and units (a launch of thousands of CTAs decodes in milliseconds): CTAs
    are checked all at once, those with the same event area are cut into ``(CTA, unit, entry)``
    arrays together, circular segments are put back in writing order, and starts are matched with
    ends by sorting each unit's entries by scope, then order."""
    raw = np.frombuffer(payload, dtype=np.uint8) if not isinstance(payload, np.ndarray) else payload
    size = layout.scratch_size
    if size <= 0 or size % 4 or layout.total_units <= 0 or not layout.uids:
        raise BufferError(
            f"the kernel's profile layout is not usable (scratch {size} B, "
            f"{layout.total_units} units, {len(layout.uids)} sampled)"
        )
    if any(u < 0 or u >= layout.total_units for u in layout.uids):
        raise BufferError(f"sampled unit ids {layout.uids} are outside 0..{layout.total_units - 1}")
    whole = min(num_ctas, len(raw) // size)
    out = _empty(num_ctas)
    if whole < num_ctas:
        out.bad_ctas += num_ctas - whole
        out.complain(f"the buffer holds {len(raw)} bytes, {whole} of {num_ctas} CTAs' {size} each")
    header_words = CTA_HEADER_WORDS + layout.total_units
    n_seg = len(layout.uids)
    if whole == 0 or header_words * 4 > size:
        out.bad_ctas += whole
        return out
    words = np.ascontiguousarray(raw[: whole * size]).view(np.uint32).reshape(whole, size // 4)
    buf_size = words[:, 3].astype(np.int64)
    ok = (words[:, 0] == PREAMBLE) & (buf_size > 0) & (header_words * 4 + buf_size <= size)
    ok &= buf_size % (n_seg * ENTRY_BYTES) == 0
    bad = np.flatnonzero(~ok)
    if len(bad):
        out.bad_ctas += len(bad)
        first = int(bad[0])
        if int(words[first, 0]) != PREAMBLE:
            out.complain(
                f"CTA slot {first}: no preamble (the CTA did not finish, or the buffer is not a profile)"
            )
        else:
            out.complain(
                f"CTA slot {first}: event area of {int(buf_size[first])} B does not fit its {size} B slot"
            )
    good = np.flatnonzero(ok)
    out.cta_id[good], out.sm[good] = words[good, 1], words[good, 2]
    times = words[good, 4:10].astype(np.uint64)
    for k, target in ((0, out.init_ns), (2, out.pre_final_ns), (4, out.post_final_ns)):
        target[good] = (times[:, k] | (times[:, k + 1] << np.uint64(32))).astype(np.int64)
    parts = [
        _spans_of(words, group, int(area), header_words, layout, out)
        for area, group in _groups(buf_size, good)
    ]
    parts = [p for p in parts if p is not None]
    if parts:
        out.cta, out.unit, out.scope, out.start_cycle, out.end_cycle = (
            np.concatenate(c) for c in zip(*parts, strict=True)
        )
    return out


def _groups(buf_size: np.ndarray, good: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """The good CTAs by the size of their event area (one group, unless the buffer is damaged)."""
    sizes = buf_size[good]
    return [(int(area), good[sizes == area]) for area in np.unique(sizes)]


def _spans_of(
    words: np.ndarray, ctas: np.ndarray, area: int, header_words: int, layout: Layout, out: Decoded
) -> tuple[np.ndarray, ...] | None:
    """The completed scopes of CTAs whose event areas are ``area`` bytes: (cta, unit, scope, start, end)."""
    uids = np.asarray(layout.uids)
    n_seg = len(uids)
    cap = area // n_seg // ENTRY_BYTES
    if cap == 0:
        return None
    written = words[np.ix_(ctas, CTA_HEADER_WORDS + uids)].astype(np.int64) // 2  # (ctas, segments)
    out.dropped_entries += int(np.clip(written - cap, 0, None).sum())
    first = np.where(written > cap, written % cap, 0).ravel()
    kept = np.minimum(written, cap).ravel()  # entries to read per (CTA, segment), only those are touched
    flat = np.repeat(np.arange(len(kept)), kept)
    e_idx = np.arange(len(flat)) - np.repeat(np.cumsum(kept) - kept, kept)  # writing order within its segment
    c_idx, s_idx = flat // n_seg, flat % n_seg
    slot = (first[flat] + e_idx) % cap  # where a full circular segment keeps that entry
    at = header_words + (s_idx * cap + slot) * 2  # the entry's tag word; its clock's low word follows
    rows = ctas[c_idx]
    tags = words[rows, at].astype(np.int64)
    clocks = ((tags & 0x7FF) << 32) | words[rows, at + 1].astype(np.int64)
    is_end = (tags >> 31) & 1
    scope = (tags >> 23) & 0xFF
    stream = c_idx * n_seg + s_idx  # one unit of one CTA
    sort = np.lexsort((e_idx, scope, stream))
    stream, scope, is_end, clocks, c_idx, s_idx = (
        a[sort] for a in (stream, scope, is_end, clocks, c_idx, s_idx)
    )
    same = (stream[:-1] == stream[1:]) & (scope[:-1] == scope[1:])
    pair = same & (is_end[:-1] == 0) & (is_end[1:] == 1)
    # a start followed (in its unit and scope) by an end is one span; a start is used once
    pair[1:] &= ~pair[:-1]
    starts = np.flatnonzero(pair)
    ends = starts + 1
    forward = clocks[ends] >= clocks[starts]
    out.unmatched += int(len(clocks) - 2 * len(starts)) + int((~forward).sum())
    starts, ends = starts[forward], ends[forward]
    return (
        ctas[c_idx[starts]].astype(np.int64),
        uids[s_idx[starts]].astype(np.int64),
        scope[starts],
        clocks[starts],
        clocks[ends],
    )


def read_host_buffer(data: bytes | memoryview) -> tuple[Decoded, Layout, int]:
    """Decode Proton's host-side form (header, unit ids, then the CTAs); also returns the layout
    and the device type the header names (1: CUDA, 2: HIP)."""
    if len(data) < HOST_HEADER_WORDS * 4:
        raise BufferError(f"a profile buffer of {len(data)} bytes is shorter than its header")
    (
        version,
        _,
        header_size,
        payload_offset,
        payload_size,
        device,
        num_ctas,
        total_units,
        scratch,
        n_uids,
    ) = struct.unpack_from(f"<{HOST_HEADER_WORDS}I", data, 0)
    if version != HOST_VERSION:
        raise BufferError(f"profile buffer version {version}; this reader knows version {HOST_VERSION}")
    if n_uids > 4096 or HOST_HEADER_WORDS * 4 + n_uids * 4 > len(data) or payload_offset > len(data):
        raise BufferError("the profile buffer's header is damaged (unit ids or payload beyond its end)")
    uids = list(struct.unpack_from(f"<{n_uids}I", data, HOST_HEADER_WORDS * 4))
    layout = Layout(scratch, total_units, uids)
    if num_ctas and scratch and num_ctas > payload_size // max(scratch, 1) + 1:
        raise BufferError(f"the header names {num_ctas} CTAs of {scratch} B in a {payload_size} B payload")
    payload = memoryview(data)[payload_offset : payload_offset + payload_size]
    return decode(bytes(payload), num_ctas, layout), layout, device


def host_buffer(payload: bytes | np.ndarray, num_ctas: int, layout: Layout, device: int = 1) -> bytes:
    """Proton's host-side form of one launch's buffer (what :func:`read_host_buffer` reads):
    ``InstrumentationHook.host_buffer`` and the recorded test fixtures."""
    body = payload.tobytes() if isinstance(payload, np.ndarray) else bytes(payload)
    header_size = (HOST_HEADER_WORDS + len(layout.uids)) * 4
    words = [
        HOST_VERSION, 4, header_size, header_size, len(body), device, num_ctas,
        layout.total_units, layout.scratch_size, len(layout.uids), *layout.uids,
    ]  # fmt: skip
    return struct.pack(f"<{len(words)}I", *words) + body
