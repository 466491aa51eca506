"""The JAX context's CUPTI data from an H100, replayed without a GPU (tests/fixtures/cupti_jax).

Recorded by ``scripts/record_jax_fixture.py`` (JAX 0.11.2, XLA's command buffers on, the default):
in scope ``step``, three calls of examples/train_jax.py's jitted ``train_step`` from its first
(compiling, autotuning) call, each followed by an eager ``x * 2.0`` and ``jnp.sum``. The replay
resolves every kernel against the executables' HLO tables saved with the drains.
"""

from __future__ import annotations

from deuteron.collect.backends.cupti import replay
from deuteron.collect.context.jax.hlo import kernel_name
from deuteron.collect.session import Session
from deuteron.model.tree import KERNEL
from tests.helpers.paths import FIXTURES_DIR
from tests.helpers.profiles import child_path as at
from tests.helpers.profiles import kernel_count

FIXTURE = FIXTURES_DIR / "cupti_jax"


def replayed(context: str = "jax") -> Session:
    session = Session(0, "fixture", backend="interpreter", context=context)
    replay(FIXTURE, session)
    return session


def test_every_kernel_is_under_its_function_and_the_autotuning_under_compile() -> None:
    session = replayed()
    assert session.tree.jax is not None and session.tree.jax.unresolved == 0
    step = at(session.profile.root, "step")
    assert kernel_count(session.profile.root) == kernel_count(step) == 2776
    train = at(step, "train_step (jit)")
    assert kernel_count(at(train, "compile")) == 2569  # XLA's autotuning while train_step compiled
    assert kernel_count(train) - kernel_count(at(train, "compile")) == 3 * 67  # 67 kernels a step, 3 steps


def test_eager_ops_are_their_own_executables_not_part_of_the_step() -> None:
    step = at(replayed().profile.root, "step")
    assert kernel_count(at(step, "multiply (jit)", "mul", "loop_multiply_fusion (HLO)")) == 3
    assert kernel_count(at(step, "_reduce_sum (jit)", "reduce_sum", "input_reduce_fusion (HLO)")) == 3


def test_scopes_backward_primitives_and_hlo_ops() -> None:
    train = at(replayed().profile.root, "step", "train_step (jit)")
    layers = [at(train, "encoder", f"layers.{i}") for i in (0, 1)]
    # each layer's forward projection: its GEMM and two slices, once a step, in each layer
    for layer in layers:
        q = at(layer, "attn", "q", "dot_general")
        assert sorted(kernel_count(c) for c in q.children.values()) == [3, 3, 3]
        assert kernel_count(at(layer, "mlp")) > 0 and kernel_count(at(layer, "attn", "backward")) > 0
    assert kernel_count(at(train, "sgd", "sub")) == 30  # ten parameter updates a step
    hlo_frames = [n for n in train.walk() if n.name.endswith(" (HLO)")]
    assert all(kernel_count(n) % 3 == 0 for n in hlo_frames)
    # XLA reused one kernel for identical fusions: the HLO frame says which instruction ran it
    reused = [
        (n.name, k.name)
        for n in hlo_frames
        for k in n.children.values()
        if k.name != kernel_name(n.name.removesuffix(" (HLO)"))
    ]
    assert reused and all(name.startswith(kernel.rstrip("0123456789").rstrip("_")) for name, kernel in reused)


def test_nothing_outside_a_function_or_hlo_op() -> None:
    train = at(replayed().profile.root, "step", "train_step (jit)")
    for node in train.walk():
        if node.name == "compile":
            continue
        for child in node.children.values():
            if child.type == KERNEL:  # every kernel of a step sits right below the HLO op that ran it
                assert node.name.endswith(" (HLO)"), (node.name, child.name)
