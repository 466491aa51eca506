"""Recorded CUPTI drains filed into a session without a GPU (the fixtures CI replays)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from deuteron.collect.backends.cupti.backend import ROOT_CTX, CuptiBackend
from deuteron.collect.backends.cupti.sampled_lines import SampleCollector
from deuteron.collect.backends.cupti.sampling import Drain, SampleConfig
from deuteron.collect.backends.port import Recorder


def replay(folder: str | os.PathLike[str], session: Recorder) -> CuptiBackend:
    """File drains saved under DEUTERON_CUPTI_RECORD into ``session``'s tree, without a GPU.

    This is how CI tests decoding, correlation and aggregation on buffers captured on a GPU; PC
    sampling drains (``samples_*``) and the sampled kernels' code (``kernel_*``) replay with them.
    """
    backend = CuptiBackend()
    backend.attached = [session]
    backend.sharing.join(session.setup.session_id, ROOT_CTX)
    backend.live = False
    samples = sorted(Path(folder).glob("samples_*.json"))
    if samples:  # kernels then carry their symbol, for the samples to find their nodes
        backend.sampling = SampleCollector(SampleConfig(Drain.load(samples[0])[1]))
        backend.sampling.load_asm(Path(folder))
    stems = sorted(Path(folder).glob("drain*.json"))
    if not stems:
        raise FileNotFoundError(f"{folder}: no recorded drains (drain*.json)")
    for stem in stems:
        meta = json.loads(stem.read_text())
        backend.names.update({int(k): v for k, v in meta["names"].items()})
        backend.threads = {int(k): v for k, v in meta["threads"].items()}
        backend.meta_table = {int(k): (v[0], v[1]) for k, v in meta["metas"].items()}
        backend.clock_offset = meta["offset"]
        for name, table in session.recorded().items():  # contexts, states, frameworks' places
            if meta.get(name):
                table.replay(meta[name])
        backend.ingest(stem.with_suffix(".entries").read_bytes(), stem.with_suffix(".kernels").read_bytes())
    if backend.sampling is not None:  # PC samples (--sample): filed after the kernels they belong to
        for path in samples:
            session.file_samples(backend.sampling.rows(Drain.load(path)[0]))
        session.note(pc_sampling=backend.sampling.metadata())
    return backend
