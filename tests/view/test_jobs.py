"""Rank files read together must be one job's: a mix of jobs or a rank given twice is refused in one
line; ranks missing from the job are said."""

from __future__ import annotations

import pytest

from deuteron.model.errors import DeuteronError
from deuteron.model.tree import Profile
from deuteron.view.jobs import check_one_job


def _rank(rank: int | None, job: str | None = None, size: int | None = None) -> Profile:
    p = Profile()
    if rank is not None:
        p.metadata["rank"] = str(rank)
    if job is not None:
        p.metadata["job_id"] = job
    if size is not None:
        p.metadata["world_size"] = str(size)
    return p


def test_one_jobs_ranks_pass_and_missing_ones_are_said() -> None:
    files = [f"run.rank{r}.hatchet" for r in range(4)]
    whole = [_rank(r, "slurm:1.0", 4) for r in range(4)]
    assert check_one_job(whole, files) == []
    assert check_one_job([whole[0], whole[2]], [files[0], files[2]]) == [
        "2 of the job's 4 ranks given; missing: rank 1, 3"
    ]
    many = [_rank(r, "slurm:1.0", 1024) for r in range(2)]
    (note,) = check_one_job(many, files[:2])
    assert note.startswith("2 of the job's 1024 ranks given; missing: rank 2, 3, 4, 5, 6, 7, 8, 9, ...")


def test_files_of_two_jobs_are_refused_naming_them() -> None:
    mixed = [_rank(0, "torchrun:h:10:5", 2), _rank(1, "torchrun:h:10:5", 2), _rank(2, "torchrun:h:7:1", 3)]
    files = ["a.rank0.hatchet", "a.rank1.hatchet", "a.rank2.hatchet"]
    with pytest.raises(DeuteronError) as err:
        check_one_job(mixed, files)
    said = str(err.value)
    first = "a.rank0.hatchet, a.rank1.hatchet (job torchrun:h:10:5)"
    assert said.startswith(f"these files are from 2 jobs: {first}")
    assert "a.rank2.hatchet (job torchrun:h:7:1); view one job's files" in said


def test_a_rank_given_twice_is_refused() -> None:
    with pytest.raises(DeuteronError, match="a.hatchet and b.hatchet are both rank 1: give one file"):
        check_one_job([_rank(1), _rank(1)], ["a.hatchet", "b.hatchet"])


def test_files_without_a_job_are_read_as_before() -> None:
    """Files from before jobs were recorded, or of RANK set by hand: nothing to check."""
    assert check_one_job([_rank(0), _rank(1), _rank(None)], ["a", "b", "c"]) == []
