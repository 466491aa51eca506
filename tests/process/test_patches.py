"""The hook manager: every change Deuteron makes to Triton is applied and undone through it."""

from __future__ import annotations

import types
from pathlib import Path

import pytest
import torch
import triton
from triton.runtime import interpreter

import deuteron
from deuteron.process.patches import MANAGER, AttributePatch, CallbackPatch, PatchManager
from tests.helpers.kernels import add


class Owner:
    def method(self) -> str:
        return "class"


class Descriptor:
    """A data descriptor like Triton's knobs: the value lives in the instance, set through __set__."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: object, objtype: type | None = None) -> object:
        return obj.__dict__.get("_" + self.name, "default") if obj is not None else self

    def __set__(self, obj: object, value: object) -> None:
        obj.__dict__["_" + self.name] = value


class Knobs:
    flag = Descriptor()


def test_attribute_patch_on_a_class_restores_the_inherited_attribute() -> None:
    class Child(Owner):
        pass

    patch = AttributePatch(Child, "method", lambda self: "patched")
    patch.apply()
    assert Child().method() == "patched" and "method" in Child.__dict__
    patch.restore()
    assert Child().method() == "class" and "method" not in Child.__dict__


def test_attribute_patch_on_an_instance_shadows_and_unshadows() -> None:
    obj = Owner()
    patch = AttributePatch(obj, "method", lambda: "instance")
    patch.apply()
    assert obj.method() == "instance" and Owner().method() == "class"
    patch.restore()
    assert "method" not in vars(obj) and obj.method() == "class"


def test_attribute_patch_goes_through_a_data_descriptor() -> None:
    knobs = Knobs()
    patch = AttributePatch(knobs, "flag", True)
    patch.apply()
    assert knobs.flag is True and vars(knobs) == {"_flag": True}
    patch.restore()
    assert knobs.flag == "default"


def test_attribute_patch_on_a_module() -> None:
    module = types.ModuleType("m")
    module.value = 1  # type: ignore[attr-defined]
    patch = AttributePatch(module, "value", 2)
    patch.apply()
    assert module.value == 2  # type: ignore[attr-defined]
    patch.restore()
    assert module.value == 1  # type: ignore[attr-defined]


def test_groups_are_counted_and_undone_in_reverse_order() -> None:
    manager = PatchManager()
    log: list[str] = []

    def make() -> list[CallbackPatch]:
        return [
            CallbackPatch(lambda: log.append("+a"), lambda: log.append("-a")),
            CallbackPatch(lambda: log.append("+b"), lambda: log.append("-b")),
        ]

    manager.acquire("g", make)
    manager.acquire("g", make)  # a second user: applied once
    assert log == ["+a", "+b"] and manager.active() == {"g": 2}
    manager.release("g")
    assert log == ["+a", "+b"] and manager.holds("g")
    manager.release("g")
    assert log == ["+a", "+b", "-b", "-a"] and manager.active() == {}
    manager.release("g")  # releasing what is not held is harmless
    assert log == ["+a", "+b", "-b", "-a"]


def test_a_group_that_fails_half_way_is_undone() -> None:
    manager = PatchManager()
    log: list[str] = []

    def boom() -> None:
        raise RuntimeError("cannot patch")

    def make() -> list[CallbackPatch]:
        return [
            CallbackPatch(lambda: log.append("+a"), lambda: log.append("-a")),
            CallbackPatch(boom, lambda: None),
        ]

    with pytest.raises(RuntimeError, match="cannot patch"):
        manager.acquire("g", make)
    assert log == ["+a", "-a"] and manager.active() == {}


def test_profiling_and_checking_share_the_interpreter_patches() -> None:
    """The real groups: the profiler and a check hold the interpreter's base patches together; the
    sanitizer's only while a check runs; nothing is left changed afterwards."""
    assert MANAGER.active() == {}
    x, y = torch.rand(300), torch.rand(300)
    driver, tune = "triton.emulated_driver", "triton.autotune_scope"  # the profile files benchmarks
    # (Inductor's benchmarker too, where another test of this process imported it)
    active = lambda: {k: v for k, v in MANAGER.active().items() if k != "inductor.benchmark_scope"}  # noqa: E731
    with deuteron.profile(backend="interpreter"):  # and turns torch's NVTX ranges into scopes
        assert active() == {"interpreter": 1, driver: 1, tune: 1, "nvtx": 1}
        with deuteron.check():
            assert active() == {"interpreter": 2, "interpreter.sanitizer": 1, driver: 2, tune: 1, "nvtx": 1}
            add(x, y, block=128)
        assert active() == {"interpreter": 1, driver: 1, tune: 1, "nvtx": 1}
        assert "set_grid_idx" not in vars(interpreter.interpreter_builder)
    assert MANAGER.active() == {}
    assert not {"create_masked_load", "set_grid_dim"} & set(vars(interpreter.interpreter_builder))
    assert triton.knobs.runtime.interpret  # the test session's own setting is untouched


def test_device_calls_leave_the_language_as_they_found_it() -> None:
    """Triton's interpreter patches triton.language at each device call (tl.max, a @jit helper) and
    never restores it; under Deuteron the patches are undone when the launch ends, so a compile later
    in the same process sees the real language."""
    import triton.language as tl

    from tests.check_corpus import correct

    def snapshot() -> dict[str, int]:
        return {name: id(value) for name, value in vars(tl.core).items() if callable(value)}

    before = snapshot()
    with deuteron.check():
        correct.CASES["softmax"]()  # tl.max and tl.sum are device calls
    assert snapshot() == before


def test_autotune_scope_waits_for_triton_to_be_imported() -> None:
    """A GPU profile starts before the script imports Triton: the autotuner is changed when it is
    imported (not before: that would cost the import), and put back when the profile ends."""
    import subprocess
    import sys

    from tests.helpers.paths import REPO

    code = """
import sys
from contextlib import nullcontext
from deuteron.triton.runtime import autotune
from deuteron.process.patches import MANAGER
undo = autotune.file_benchmarks_under(nullcontext)
assert "triton" not in sys.modules and not MANAGER.holds(autotune.SCOPE_GROUP)
from triton.runtime.autotuner import Autotuner
assert MANAGER.holds(autotune.SCOPE_GROUP) and Autotuner._bench.__qualname__.startswith("_scope_patches")
undo()
assert not MANAGER.holds(autotune.SCOPE_GROUP)
assert vars(Autotuner)["_bench"].__qualname__ == "Autotuner._bench"
undo2 = autotune.file_benchmarks_under(nullcontext)  # imported already: at once
assert MANAGER.holds(autotune.SCOPE_GROUP)
undo2()
assert vars(Autotuner)["_bench"].__qualname__ == "Autotuner._bench"
assert not any(type(f).__module__ == "deuteron.process.patches" for f in sys.meta_path)
print("ok")
"""
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


@pytest.mark.parametrize("context", ["shadow", "torch"])
def test_inductor_benchmark_launches_are_filed_under_autotune(tmp_path: Path, context: str) -> None:
    """``torch.compile`` times generated kernels through Inductor's shared benchmarker (each
    config at first call; GEMM templates under ``max-autotune``, while the model's first call
    runs): those launches go under ``<autotune>``, one scope where ``benchmark`` calls
    ``benchmark_cpu``, also under ``-c torch`` inside a module call; the launch the script made
    itself stays where it was made."""
    import json

    from tests.helpers.cli import run_cli

    (tmp_path / "s.py").write_text(
        """
import torch, triton, triton.language as tl
from torch._inductor.runtime.benchmarking import benchmarker

@triton.jit
def twice_kernel(x, n, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.store(x + o, tl.load(x + o, mask=o < n) * 2, mask=o < n)

x = torch.ones(8)
launch = lambda: twice_kernel[(1,)](x, 8, BLOCK=8)

class Tuned(torch.nn.Module):
    def forward(self, t):
        launch()
        benchmarker.benchmark_cpu(launch, warmup=0, rep=0)  # runs it twice: once per stretch
        benchmarker.benchmark(launch, device="cpu", warmup=0, rep=0)
        return t

Tuned()(x)
"""
    )
    proc = run_cli("run", "-b", "interpreter", "-c", context, "s.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    root = json.loads((tmp_path / "deuteron.hatchet").read_text())[0]
    counts: dict[tuple[str, ...], int] = {}

    def walk(node: dict, path: tuple[str, ...]) -> None:  # type: ignore[type-arg]
        here = (*path, node["frame"]["name"])
        if node["frame"]["name"] == "twice_kernel":
            counts[here[1:]] = counts.get(here[1:], 0) + node["metrics"]["count"]
        for child in node.get("children", []):
            walk(child, here)

    walk(root, ())
    under = {p: c for p, c in counts.items() if "<autotune>" in p}
    outside = {p: c for p, c in counts.items() if "<autotune>" not in p}
    assert sum(under.values()) == 4 and sum(outside.values()) == 1, counts
    assert all(p.count("<autotune>") == 1 for p in under), under
    if context == "torch":  # the script's own launch is under its module
        assert list(outside) == [("Tuned", "twice_kernel")], outside
