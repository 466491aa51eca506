"""Record the JAX-context CUPTI fixture CI replays (tests/fixtures/cupti_jax): run on a GPU.

    DEUTERON_CUPTI_RECORD=tests/fixtures/cupti_jax python scripts/record_jax_fixture.py

Known work, all inside scope ``step`` and recorded from the first call (so XLA's autotuning while
``train_step`` compiles is in it): three calls of ``examples/train_jax.py``'s jitted
``train_step`` (2 encoder layers under ``jax.named_scope``s, SGD in scope ``sgd``) and, after each,
one eager ``x * 2.0`` and ``jnp.sum``. The session also saves the optimized HLO table of every
executable, which the replay resolves kernels with.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp

import deuteron


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository: its examples package
    from examples import train_jax as example

    key = jax.random.PRNGKey(0)
    params = example.init(key)
    x, y = jax.random.normal(key, (64, example.WIDTH)), jnp.zeros((64, example.WIDTH))
    jax.block_until_ready((params, x, y))
    deuteron.start("fixture", backend="cupti", context="jax")
    with deuteron.scope("step"):
        for _ in range(3):
            params, loss = example.train_step(params, x, y)
            total = jnp.sum(x * 2.0)
            jax.block_until_ready((params, loss, total))
    deuteron.finalize()


if __name__ == "__main__":
    main()
