"""What the link between the GPUs gives an all-reduce of the sizes the DDP job sends, measured alone,
to set beside what `deuteron view NAME.rank*.hatchet --advise` reports for the job's own calls
(``[collectives]``, ``[link]``; docs/distributed.md, "The arithmetic").

    torchrun --nproc_per_node 2 benchmarks/nccl_busbw.py                      # NCCL, on 2 GPUs
    python -m torch.distributed.run --nproc_per_node 2 benchmarks/nccl_busbw.py --backend gloo --sizes 1M

Each size is all-reduced ``--warmup`` times, then ``--iters`` times, each iteration after a
barrier and a synchronize, so that every rank starts it together and no rank's time holds a wait.
An iteration's time on a rank is taken with CUDA events around the all-reduce (NCCL), or with the
CPU's clock around the blocking call (gloo); its **transfer** is the shortest of the ranks' times
(the rank that started last waited for no one: the same rule the view applies to NCCL's
durations), and the table gives the median over the iterations and, from it, as nccl-tests does:

    algbw = bytes / time
    busbw = algbw * 2 (n - 1) / n        (all_reduce over n ranks; 1x for n = 2)

The default sizes are the gradient buckets of the DDP fixture (tests/fixtures/ranks/ddp: a 2-layer
Llama, hidden 1024, float32 gradients: buckets of 26, 27, 32, 33 and 44 MiB, and the 162 MiB
all-reduce of set-up). Rank 0 prints the table.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
import torch.distributed as dist

DDP_BUCKETS = "27267072,28319744,33554432,34607104,46141440,169889792"  # bytes: the fixture's calls
UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def size_in_bytes(text: str) -> int:
    """``33554432``, ``1M`` (MiB, as nccl-tests' -b/-e count), ``512K``, ``1G``."""
    text = text.strip().upper().removesuffix("B")
    scale = UNITS.get(text[-1:], 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


def shown(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def one_size(nbytes: int, device: torch.device, warmup: int, iters: int) -> list[float]:
    """This rank's time (s) of each measured all-reduce of ``nbytes`` of float32."""
    x = torch.ones(max(nbytes // 4, 1), dtype=torch.float32, device=device)
    cuda = device.type == "cuda"
    times = []
    for i in range(warmup + iters):
        if cuda:
            dist.barrier(device_ids=[device.index])
            torch.cuda.synchronize(device)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            dist.all_reduce(x)
            end.record()
            end.synchronize()
            took = start.elapsed_time(end) / 1e3
        else:
            dist.barrier()
            began = time.perf_counter()
            dist.all_reduce(x)
            took = time.perf_counter() - began
        if i >= warmup:
            times.append(took)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backend", choices=("nccl", "gloo"), default="nccl")
    parser.add_argument("--sizes", default=DDP_BUCKETS, help="bytes, comma-separated (1M = 1 MiB)")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--iters", type=int, default=20)
    args = parser.parse_args()
    dist.init_process_group(args.backend)
    rank, n = dist.get_rank(), dist.get_world_size()
    if args.backend == "nccl":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    factor = 2 * (n - 1) / n if n > 1 else 1.0
    rows = []
    for nbytes in (size_in_bytes(s) for s in args.sizes.split(",") if s.strip()):
        mine = torch.tensor(one_size(nbytes, device, args.warmup, args.iters), dtype=torch.float64).to(device)
        every = [torch.zeros_like(mine) for _ in range(n)]
        dist.all_gather(every, mine)
        per_rank = torch.stack([t.cpu() for t in every])  # ranks x iterations
        transfer = statistics.median(per_rank.min(dim=0).values.tolist())  # the last to start, per iteration
        rank0 = statistics.median(per_rank[0].tolist())
        algbw = nbytes / transfer / 1e9
        rows.append((nbytes, transfer, rank0, algbw, algbw * factor))
    if rank == 0:
        print(
            f"all_reduce of float32 over {n} ranks ({args.backend}), {args.iters} iterations after "
            f"{args.warmup} warm-up, each after a barrier: time = the shortest rank's (median of the "
            f"iterations); algbw = bytes / time; busbw = algbw x 2(n-1)/n = algbw x {factor:g}"
        )
        print(
            f"{'size':>10} {'bytes':>12} {'time_ms':>9} {'rank0_ms':>9} {'algbw_GB/s':>11} {'busbw_GB/s':>11}"
        )
        for nbytes, transfer, rank0, algbw, busbw in rows:
            print(
                f"{shown(nbytes):>10} {nbytes:>12,} {transfer * 1e3:>9.3f} {rank0 * 1e3:>9.3f} "
                f"{algbw:>11.2f} {busbw:>11.2f}"
            )
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
