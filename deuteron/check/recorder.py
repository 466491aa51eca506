"""The access recorder: every checked launch's accesses, kept compactly for ``--record`` (the
format is in :mod:`deuteron.formats.access_record`) and bounded by a number of lanes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from deuteron.formats import access_record
from deuteron.formats.files import source_text
from deuteron.model.access import MASKED, Access, LaunchInfo, SiteTable

DEFAULT_LIMIT = 4_000_000


def kernel_sources(files: set[str]) -> dict[str, str]:
    """The text of each kernel source file, so the record shows the lines its sites name even
    where the file is gone or changed."""
    texts = {file: source_text(file) for file in sorted(files)}
    return {file: text for file, text in texts.items() if text is not None}


class AccessRecorder:
    """Every access of every checked launch, as rows and lane offsets (the ``--record`` file's
    arrays), within a lane budget so a long run cannot fill memory; written once at the end."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self.limit = limit
        self.launches: list[dict[str, Any]] = []
        self.rows: list[tuple[int, int, int, int, int, int, int]] = []
        self.chunks: list[np.ndarray] = []
        self.lanes = 0  # every lane kept, masked-off ones included (offsets' length)
        self.dropped = 0
        self.masked_lanes = 0
        self.dropped_masked = 0
        self.seq = -1
        self.launch: LaunchInfo | None = None
        self.sites = SiteTable()
        self.programs: list[list[int]] = []

    def begin(self, launch: LaunchInfo) -> None:
        self.launch = launch
        self.sites = launch.sites
        self.programs = []
        self.launches.append(
            {
                "index": launch.index,
                "kernel": launch.kernel,
                "file": launch.file,
                "grid": list(launch.grid),
                "tensors": [
                    {
                        "name": t.name,
                        "shape": list(t.shape),
                        "strides": list(t.strides),
                        "dtype": t.dtype,
                        "element_size": t.element_size,
                        "storage": t.storage,
                        "offset": t.data_ptr - launch.storages[t.storage].start,
                    }
                    for t in launch.tensors
                ],
                "storages": [{"nbytes": s.nbytes, "granule": s.granule} for s in launch.storages],
                "programs": self.programs,
            }
        )

    def program(self, seq: int, pid: tuple[int, int, int]) -> None:
        self.seq = seq
        self.programs.append(list(pid))

    def access(self, access: Access) -> None:
        """One allocation's lanes of an access (``access.storage``, one int), masked-off ones with
        ``kind + MASKED``: a row, and their offsets while the lane budget lasts."""
        launch = self.launch
        if launch is None:
            return
        kind, addresses, storage, site = access.kind, access.addresses, int(access.storage), access.site
        n = int(addresses.size)
        count = 0
        # Masked-off lanes have a budget of their own: they never crowd out real accesses.
        masked = kind >= MASKED
        if (self.masked_lanes if masked else self.lanes - self.masked_lanes) + n <= self.limit:
            offsets = (addresses - np.uint64(launch.storages[storage].start)).astype(np.int64)
            self.chunks.append(offsets)
            count = n
            if masked:
                self.masked_lanes += n
        elif masked:
            self.dropped_masked += n
        else:
            self.dropped += n
        self.rows.append((len(self.launches) - 1, self.seq, kind, storage, site, self.lanes, count))
        self.lanes += count

    def end(self) -> None:
        self.launch = None

    def write(self, path: str | Path) -> Path:
        used = sorted({r[4] for r in self.rows if r[4] >= 0})
        site_index = {s: i for i, s in enumerate(used)}
        rows = np.array(
            [(a, b, c, d, site_index.get(e, -1), f, g) for a, b, c, d, e, f, g in self.rows],
            dtype=access_record.ROW,
        )
        header = {
            "lanes": self.lanes,
            "dropped_lanes": self.dropped,
            "masked_lanes": self.masked_lanes,
            "dropped_masked_lanes": self.dropped_masked,
            "limit": self.limit,
            "sites": [
                {"file": self.sites[s].file, "line": self.sites[s].line, "function": self.sites[s].function}
                for s in used
            ],
            "launches": self.launches,
            "sources": kernel_sources(
                {self.sites[s].file for s in used} | {x["file"] for x in self.launches}
            ),
        }
        offsets = np.concatenate(self.chunks) if self.chunks else np.zeros(0, dtype=np.int64)
        return access_record.write(header, rows, offsets, path)
