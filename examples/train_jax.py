"""A small JAX training loop for ``deuteron run -c jax``: a two-layer attention + MLP encoder, its
layers in ``jax.named_scope``s, trained a few steps with SGD, on the GPU when JAX has one.

    deuteron run -c jax examples/train_jax.py --steps 3
"""

from __future__ import annotations

import argparse
from typing import Any

import jax
import jax.numpy as jnp

WIDTH = 128


def dense(p: dict[str, Any], x: jax.Array, name: str) -> jax.Array:
    with jax.named_scope(name):
        return x @ p["w"] + p["b"]


def layer(p: dict[str, Any], x: jax.Array) -> jax.Array:
    with jax.named_scope("attn"):
        q, k = dense(p["q"], x, "q"), dense(p["k"], x, "k")
        x = x + jax.nn.softmax(q @ k.T / jnp.sqrt(x.shape[-1]), axis=-1) @ x
    with jax.named_scope("mlp"):
        x = x + jax.nn.gelu(dense(p["up"], x, "up")) @ p["down"]
    with jax.named_scope("norm"):
        x = (x - x.mean(-1, keepdims=True)) / (x.std(-1, keepdims=True) + 1e-5)
    return x


def model(params: list[dict[str, Any]], x: jax.Array) -> jax.Array:
    with jax.named_scope("encoder"):
        for i, p in enumerate(params):
            with jax.named_scope(f"layers.{i}"):
                x = layer(p, x)
    return x


def loss_fn(params: list[dict[str, Any]], x: jax.Array, y: jax.Array) -> jax.Array:
    return jnp.mean((model(params, x) - y) ** 2)


@jax.jit
def train_step(params: list[dict[str, Any]], x: jax.Array, y: jax.Array) -> tuple[Any, jax.Array]:
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    with jax.named_scope("sgd"):
        params = jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)
    return params, loss


def init(key: jax.Array, width: int = WIDTH, layers: int = 2) -> list[dict[str, Any]]:
    def linear(k: jax.Array, a: int, b: int) -> dict[str, jax.Array]:
        return {"w": jax.random.normal(k, (a, b)) * 0.05, "b": jnp.zeros((b,))}

    params = []
    for k in jax.random.split(key, layers):
        ks = jax.random.split(k, 4)
        params.append(
            {
                "q": linear(ks[0], width, width),
                "k": linear(ks[1], width, width),
                "up": linear(ks[2], width, 2 * width),
                "down": jax.random.normal(ks[3], (2 * width, width)) * 0.05,
            }
        )
    return params


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    key = jax.random.PRNGKey(0)
    params = init(key)
    x, y = jax.random.normal(key, (64, WIDTH)), jnp.zeros((64, WIDTH))
    for _ in range(args.steps):
        params, loss = train_step(params, x, y)
    print(f"loss after {args.steps} steps: {float(loss):.4f} on {jax.devices()[0].platform}")


if __name__ == "__main__":
    main()
