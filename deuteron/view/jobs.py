"""Rank files read together must be one job's: ``deuteron view NAME.rank*.hatchet`` after a second
run of fewer ranks in the same folder would otherwise merge the new ranks with the old run's
leftovers, and every min / median / max would mix two jobs without a word.

Each rank's file says its job (``job_id``, ``rank``, ``world_size`` in its metadata, see
:mod:`deuteron.collect.job`). Files of different jobs, or two files of one rank, are refused in one
line naming them; ranks missing from a job are said, and the view goes on with those given.
"""

from __future__ import annotations

from collections.abc import Sequence

from deuteron.model.errors import DeuteronError
from deuteron.model.tree import Profile


def rank_of(profile: Profile, index: int) -> str:
    """A rank file's rank as its metadata says it, else its place among the files given."""
    rank = profile.metadata.get("rank")
    return rank if isinstance(rank, str) and rank else str(index)


def check_one_job(profiles: Sequence[Profile], sources: Sequence[str]) -> list[str]:
    """Notes for several rank files of one job (the ranks missing from it); raises DeuteronError
    for files of several jobs or one rank given twice. Files written before jobs were recorded (no
    ``job_id``) are taken as they are."""
    jobs: dict[str, list[str]] = {}
    ranks: dict[str, str] = {}
    sizes: set[int] = set()
    for profile, source in zip(profiles, sources, strict=True):
        meta = profile.metadata
        job = meta.get("job_id")
        if isinstance(job, str) and job:
            jobs.setdefault(job, []).append(source)
        rank = meta.get("rank")
        if isinstance(rank, str) and rank:
            if rank in ranks:
                twice = f"{ranks[rank]} and {source} are both rank {rank}"
                raise DeuteronError(f"{twice}: give one file per rank")
            ranks[rank] = source
        size = meta.get("world_size")
        if isinstance(size, str) and size.isdigit():
            sizes.add(int(size))
    if len(jobs) > 1:
        groups = "; ".join(f"{', '.join(files)} (job {job})" for job, files in jobs.items())
        raise DeuteronError(f"these files are from {len(jobs)} jobs: {groups}; view one job's files")
    notes = []
    if len(sizes) == 1 and ranks:
        size = sizes.pop()
        missing = sorted(set(range(size)) - {int(r) for r in ranks if r.isdigit()})
        if missing:
            shown = ", ".join(str(r) for r in missing[:8]) + (", ..." if len(missing) > 8 else "")
            notes.append(f"{len(ranks)} of the job's {size} ranks given; missing: rank {shown}")
    return notes
