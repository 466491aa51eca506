"""Which job this process belongs to and which rank it is, read from the launcher's environment.

Every launcher of a distributed job tells each process its rank, under its own names: torchrun and
``python -m torch.distributed.run`` (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``), Slurm's ``srun``
(``SLURM_PROCID``, ``SLURM_NTASKS``), Open MPI's ``mpirun`` (``OMPI_COMM_WORLD_RANK``) and
MPICH/Intel MPI's (``PMI_RANK``). Each rank writes its own files (``NAME.rank<R>.hatchet``), and
the job's id goes into each file's metadata so that files of two jobs left in one folder are never
read as one job (``deuteron view NAME.rank*.hatchet`` refuses the mix).

The job id is the launcher's own where it has one: torchrun's rendezvous id (``--rdzv-id``; a
random one with ``--standalone``), Slurm's job and step, Open MPI's job (PMIx namespace). Plain
``torchrun --nproc_per_node N`` keeps the rendezvous id ``none``; on one node its ranks are then
told apart from another job's by their parent, the launcher's agent process (its pid and start
time), which every rank of the job shares and no other job does.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass

# (launcher, rank, world size, local rank): the first whose rank is set names the job's launcher.
LAUNCHERS: tuple[tuple[str, str, str, str], ...] = (
    ("torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"),
    ("slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"),
    ("mpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
    ("mpi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"),
)


@dataclass(frozen=True)
class Job:
    """This process's place in a distributed job; ``rank`` None outside one."""

    rank: int | None = None
    world_size: int | None = None
    local_rank: int | None = None
    launcher: str = ""
    job_id: str | None = None

    def metadata(self) -> dict[str, str]:
        """What a rank's file says of its job (strings, as Proton's metadata values are)."""
        if self.rank is None:
            return {}
        out = {"rank": str(self.rank), "launcher": self.launcher}
        if self.world_size is not None:
            out["world_size"] = str(self.world_size)
        if self.local_rank is not None:
            out["local_rank"] = str(self.local_rank)
        if self.job_id:
            out["job_id"] = self.job_id
        return out


def current(environ: Mapping[str, str] | None = None) -> Job:
    """The job this process runs in, from its environment (``os.environ`` by default).

    A launcher's variables count only for a job of more than one process, except torchrun's
    ``RANK`` (set for a distributed program even with one process); a lone ``LOCAL_RANK`` (set by
    some launchers alone) still names the rank, as before."""
    env = os.environ if environ is None else environ
    for launcher, rank_var, size_var, local_var in LAUNCHERS:
        rank = _number(env.get(rank_var))
        if rank is None:
            continue
        size = _number(env.get(size_var))
        if launcher != "torchrun" and (size is None or size < 2):
            continue  # srun or mpirun of a single process: not a multi-rank job
        return Job(rank, size, _number(env.get(local_var)), launcher, _job_id(launcher, env))
    local = _number(env.get("LOCAL_RANK"))
    if local is not None:
        return Job(local, None, local, "env", None)
    return Job()


def _number(value: str | None) -> int | None:
    value = (value or "").strip()
    return int(value) if value.isdigit() else None


def _job_id(launcher: str, env: Mapping[str, str]) -> str | None:
    """The launcher's id of this job (see the module's docstring), or None where it gives none."""
    if launcher == "slurm":
        job = env.get("SLURM_JOB_ID", "")
        return f"slurm:{job}.{env.get('SLURM_STEP_ID', '')}" if job else None
    if launcher == "mpi":
        space = env.get("PMIX_NAMESPACE") or env.get("OMPI_MCA_orte_ess_jobid")
        return f"mpi:{space}" if space else None
    run_id = env.get("TORCHELASTIC_RUN_ID", "")
    if run_id and run_id != "none":
        return f"torchrun:{run_id}"
    if not run_id or env.get("GROUP_WORLD_SIZE", "1") != "1":
        return None  # RANK set by hand, or several nodes without a rendezvous id: nothing to go by
    agent = os.getppid()
    return f"torchrun:{socket.gethostname()}:{agent}:{_started(agent)}"


def _started(pid: int) -> str:
    """When process ``pid`` started (clock ticks since boot, from /proc), or "" where unknown: with
    the pid it names one process, even after pids are reused."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""
