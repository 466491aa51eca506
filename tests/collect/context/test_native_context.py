"""The native context (``-c native``) without a GPU: the shim's unwinder called from C code built
here (as a CUPTI launch callback would call it from inside a library), its paths kept once each,
symbolized and filtered, and the one-line refusals."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import pytest

from deuteron.collect.backends.cupti import _shim
from deuteron.collect.context import ContextSpecError, parse_context
from deuteron.collect.context.native import NATIVE_PLACE, NativeContext, Symbolizer, shorten_symbol
from deuteron.collect.placement import LaunchContexts
from deuteron.model.tree import Node
from tests.helpers.cli import run_cli

LIBRARY = r"""
#include <stdint.h>
typedef uint32_t (*probe_t)(void);
/* noinline and work after each call: every frame stays on the stack (no tail calls) */
__attribute__((noinline)) uint32_t launch_inner(probe_t probe) {
    volatile uint32_t id = probe();
    return id;
}
__attribute__((noinline)) uint32_t launch_outer(probe_t probe) {
    volatile uint32_t id = launch_inner(probe);
    return id;
}
"""


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    folder = tmp_path_factory.mktemp("native")
    source, out = folder / "launcher.c", folder / "liblauncher.so"
    source.write_text(LIBRARY)
    subprocess.run([cc, "-O1", "-shared", "-fPIC", str(source), "-o", str(out)], check=True)
    lib = ctypes.CDLL(str(out))
    for name in ("launch_inner", "launch_outer"):
        getattr(lib, name).argtypes = [ctypes.c_void_p]
        getattr(lib, name).restype = ctypes.c_uint32
    return lib


def test_the_c_frames_of_a_launch_are_kept_once_and_named(library: ctypes.CDLL) -> None:
    probe = _shim.native_probe()
    outer = [library.launch_outer(probe) for _ in range(3)]
    inner = library.launch_inner(probe)
    assert all(o & NATIVE_PLACE for o in outer) and inner & NATIVE_PLACE
    assert len(set(outer)) == 1  # the same path: one id
    assert inner != outer[0]
    context = NativeContext(LaunchContexts(Node("ROOT")))
    context.reader = _shim.native_paths
    root = Node("ROOT")
    leaf = context.place(outer[0], root)
    path, node = [], root
    while node.children:  # a fresh root: the one chain the path made
        assert len(node.children) == 1
        node = next(iter(node.children.values()))
        path.append(node.name)
    assert node is leaf
    # outermost first; Python, ctypes, libffi, libc and the shim itself are left out
    assert path == ["launch_outer (liblauncher.so)", "launch_inner (liblauncher.so)"]
    assert context.place(inner, Node("ROOT")).name == "launch_inner (liblauncher.so)"
    assert context.table()[(outer[0] & (NATIVE_PLACE - 1)) - 1] == path


def test_replayed_frames_need_no_shim() -> None:
    context = NativeContext(LaunchContexts(Node("ROOT")))
    context.replay([["main (app)", "at::native::add_kernel (libtorch_cuda.so)"]])
    root = Node("ROOT")
    assert context.place(NATIVE_PLACE | 1, root).name == "at::native::add_kernel (libtorch_cuda.so)"
    assert context.place(NATIVE_PLACE | 7, root) is root  # an unknown path: the launch's own place


@pytest.mark.parametrize(
    ("demangled", "short"),
    [
        ("at::native::(anonymous namespace)::addmm_out_cuda_impl(at::Tensor&, at::Tensor const&)",
         "at::native::(anonymous namespace)::addmm_out_cuda_impl"),
        ("void at::native::gpu_kernel_impl<Op>(at::TensorIteratorBase&, Op const&)",
         "at::native::gpu_kernel_impl<Op>"),
        ("c10::Dispatcher::call(int) const", "c10::Dispatcher::call"),
        ("plain_c_function", "plain_c_function"),
    ],
)  # fmt: skip
def test_cxx_names_lose_their_parameter_lists(demangled: str, short: str) -> None:
    assert shorten_symbol(demangled) == short


def test_mangled_symbols_are_demangled_by_libstdcxx() -> None:
    symbols = Symbolizer()
    assert symbols.demangle("_ZN2at4_ops6matmul4callERKNS_6TensorES4_") == "at::_ops::matmul::call"
    assert symbols.demangle("cublasSgemm_v2") == "cublasSgemm_v2"


def test_native_does_not_combine_with_torch() -> None:
    with pytest.raises(ContextSpecError, match="native does not combine"):
        parse_context("native,torch")
    assert parse_context("python,native") == ("python", ("native",))


def test_native_without_a_gpu_is_one_line(tmp_path: Path) -> None:
    script = tmp_path / "s.py"
    script.write_text("print('ran')\n")
    proc = run_cli("run", "-b", "interpreter", "-c", "native", str(script), cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0, proc.stderr
    assert "needs the cupti backend" in proc.stderr and "ran" not in proc.stdout
