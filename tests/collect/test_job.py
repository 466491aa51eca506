"""Which job and rank a process is, as each launcher says it (torchrun, srun, mpirun)."""

from __future__ import annotations

import os
import socket

import pytest

from deuteron.collect.job import Job, current


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, Job()),
        # torchrun / python -m torch.distributed.run: its rendezvous id names the job
        (
            {"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "3", "TORCHELASTIC_RUN_ID": "a1b2"},
            Job(3, 8, 3, "torchrun", "torchrun:a1b2"),
        ),
        ({"RANK": "0", "WORLD_SIZE": "1"}, Job(0, 1, None, "torchrun", None)),  # RANK alone: a rank
        # several nodes with the default rendezvous id: nothing names the job
        (
            {"RANK": "9", "WORLD_SIZE": "16", "TORCHELASTIC_RUN_ID": "none", "GROUP_WORLD_SIZE": "2"},
            Job(9, 16, None, "torchrun", None),
        ),
        # srun: the job and its step
        (
            {"SLURM_PROCID": "5", "SLURM_NTASKS": "64", "SLURM_LOCALID": "1"}
            | {"SLURM_JOB_ID": "4242", "SLURM_STEP_ID": "0"},
            Job(5, 64, 1, "slurm", "slurm:4242.0"),
        ),
        ({"SLURM_PROCID": "0", "SLURM_NTASKS": "1", "SLURM_JOB_ID": "4242"}, Job()),  # one task: no ranks
        # Open MPI (PMIx namespace), MPICH / Intel MPI
        (
            {"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "4", "PMIX_NAMESPACE": "prterun-h-77@1"},
            Job(2, 4, None, "mpi", "mpi:prterun-h-77@1"),
        ),
        ({"PMI_RANK": "1", "PMI_SIZE": "2", "MPI_LOCALRANKID": "1"}, Job(1, 2, 1, "mpi", None)),
        ({"LOCAL_RANK": "2"}, Job(2, None, 2, "env", None)),  # a lone LOCAL_RANK, as before
        ({"RANK": "x", "SLURM_PROCID": ""}, Job()),  # not numbers: not ranks
    ],
)
def test_each_launcher_names_the_rank_and_the_job(env: dict[str, str], expected: Job) -> None:
    assert current(env) == expected


def test_plain_torchrun_on_one_node_is_named_by_its_agent() -> None:
    """torchrun --nproc_per_node N keeps the rendezvous id "none": the job is its agent process
    (every rank's parent), by host, pid and start time, so a later run's agent is another job."""
    job = current({"RANK": "1", "WORLD_SIZE": "2", "TORCHELASTIC_RUN_ID": "none", "GROUP_WORLD_SIZE": "1"})
    assert job.job_id is not None
    host, pid, started = job.job_id.removeprefix("torchrun:").rsplit(":", 2)
    assert host == socket.gethostname() and pid == str(os.getppid()) and started.isdigit()


def test_the_file_says_the_job_only_for_a_rank() -> None:
    assert Job().metadata() == {}
    assert Job(5, 64, 1, "slurm", "slurm:4242.0").metadata() == {
        "rank": "5",
        "launcher": "slurm",
        "world_size": "64",
        "local_rank": "1",
        "job_id": "slurm:4242.0",
    }
    assert Job(0, None, None, "torchrun", None).metadata() == {"rank": "0", "launcher": "torchrun"}
