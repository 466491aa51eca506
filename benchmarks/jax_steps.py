"""Steady-state step time of examples/train_jax.py's jitted train_step (after warm-up), for
comparing ``-c jax`` with a plain run and with ``-c shadow``:

    python benchmarks/jax_steps.py --steps 500                          # plain
    deuteron run -b cupti -c jax benchmarks/jax_steps.py --steps 500    # JAX context

Prints one line: ``us_per_step=<mean wall microseconds per step>``. Each step waits for its result
(``block_until_ready``), so host-side costs per launch show.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=500)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository: its examples package
    from examples import train_jax as example

    key = jax.random.PRNGKey(0)
    params = example.init(key)
    x, y = jax.random.normal(key, (64, example.WIDTH)), jnp.zeros((64, example.WIDTH))
    for _ in range(20):  # compile and warm up
        params, loss = example.train_step(params, x, y)
    jax.block_until_ready(params)
    began = time.perf_counter()
    for _ in range(args.steps):
        params, loss = example.train_step(params, x, y)
        jax.block_until_ready(loss)
    print(f"us_per_step={(time.perf_counter() - began) / args.steps * 1e6:.1f}")


if __name__ == "__main__":
    main()
