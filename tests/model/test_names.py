"""Kernel names a person can read: libstdc++'s demangler and the short form's bracket parser."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from deuteron.formats import hatchet
from deuteron.model import names
from deuteron.model.names import demangle, display_name, short_name
from deuteron.render.web.profile import profile_data
from deuteron.render.web.timeline import trace_ref

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

needs_demangler = pytest.mark.skipif(not names.available(), reason="no libstdc++ to demangle with")

# Real kernels from tests/fixtures (PyTorch, cuBLAS, CUTLASS, XLA), mangled -> short.
FIXTURE_NAMES = [
    ("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_",
     "vectorized_elementwise_kernel<…>"),
    ("_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_7MeanOpsIffffEEjfLi4ELi4EEEEEvT1_",
     "reduce_kernel<…>"),
    ("_ZN2at6native53_GLOBAL__N__21739cd4_20_layer_norm_kernel_cu_9c5ada8a28vectorized_layer_norm_kernelIffLb0EEEviT0_PKT_S6_S6_PS3_S7_PS4_",
     "vectorized_layer_norm_kernel<…>"),
    ("_ZN7cutlass7Kernel2I41cutlass_80_simt_sgemm_64x64_8x5_nn_align1EEvNT_6ParamsE",
     "Kernel2<cutlass_80_simt_sgemm_64x64_8x5_nn_align1>"),
    ("_ZN43_GLOBAL__N__b6de9c8c_10_SoftMax_cu_9f978f6320softmax_warp_forwardIfffLi4ELb1ELb0EEEvPT0_PKT_iiiPKbib",
     "softmax_warp_forward<…>"),
    ("_Z16gemmSN_TN_kernelIfLi128ELi16ELi2ELi4ELi8ELi9ELb0E30cublasGemvTensorStridedBatchedIKfES2_S0_IfEEv22cublasGemmSmallNParamsIT7_T8_T9_T_E",
     "gemmSN_TN_kernel<…>"),
    ("_Z39fmha_cutlassF_f32_aligned_64x64_rf_sm80N22PyTorchMemEffAttention15AttentionKernelIfN7cutlass4arch4Sm80ELb1ELi64ELi64ELi64ELb1ELb1EE6ParamsE",
     "fmha_cutlassF_f32_aligned_64x64_rf_sm80"),
    ("_ZN15stream_executor3gpu17xla_fp_comparisonIfEEvPT_S3_fmPi", "xla_fp_comparison<float>"),
    ("_ZN15stream_executor3gpu22RepeatBufferKernelImplEPcll", "RepeatBufferKernelImpl"),
]  # fmt: skip


@needs_demangler
@pytest.mark.parametrize(("mangled", "short"), FIXTURE_NAMES)
def test_fixture_kernels_get_their_short_names(mangled: str, short: str) -> None:
    assert display_name(mangled) == short
    full = display_name(mangled, full=True)
    assert full == demangle(mangled) and full != mangled and "_Z" not in full


@needs_demangler
def test_every_mangled_name_in_the_fixtures_demangles_and_shortens() -> None:
    found: set[str] = set()
    for path in FIXTURES.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".hatchet", ".chrome_trace"):
            found |= set(re.findall(r"_Z[A-Za-z0-9_]+", path.read_text(errors="replace")))
    assert len(found) > 40
    for mangled in found:
        short = display_name(mangled)
        assert short != mangled and "::" not in short and not {" ", "("} & set(short), (mangled, short)
        assert re.fullmatch(r"[A-Za-z_][\w]*(<[^<>]*>)?", short), (mangled, short)


def test_the_example_of_the_issue() -> None:
    full = (
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
        "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)"
    )
    assert short_name(full) == "vectorized_elementwise_kernel<…>"


@pytest.mark.parametrize(
    ("demangled", "short"),
    [
        # operators: their brackets are part of the name, and they keep the class they belong to
        ("Foo::operator()(int) const", "Foo::operator()"),
        ("std::vector<int, std::allocator<int> >::operator[](unsigned long)", "vector<…>::operator[]"),
        ("Foo::operator>>(int)", "Foo::operator>>"),
        ("Foo::operator<(Foo const&) const", "Foo::operator<"),
        ("bool operator< <int>(Foo<int> const&, Foo<int> const&)", "operator< <int>"),
        ("Foo::operator unsigned long() const", "Foo::operator unsigned long"),
        ("operator new(unsigned long)", "operator new"),
        ("Foo::operator delete[](void*)", "Foo::operator delete[]"),
        # nested templates, '>>' closing two at once, function pointers in template arguments
        ("foo<bar<int>>::baz<std::pair<int,int>>(int) const &", "baz<…>"),
        ("void apply<void (*)(int), 3>(void (*)(int))", "apply<…>"),
        ("void k<&f, int (*)(float, double)>(int)", "k<…>"),
        ("void k<>(int)", "k<>"),
        # anonymous namespaces and lambdas
        ("void (anonymous namespace)::foo<int>(int)", "foo<int>"),
        ("at::native::(anonymous namespace)::kernel<float, 4>", "kernel<…>"),
        ("at::native::foo(int)::{lambda(float)#1}::operator()(float) const", "foo::{lambda#1}::operator()"),
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
            "pow_tensor_scalar_kernel_impl<float, float>(at::TensorIteratorBase&, float)::{lambda(float)#1}, "
            "std::array<char*, 2ul> >(int, at::native::(anonymous namespace)::pow_tensor_scalar_kernel_impl"
            "<float, float>(at::TensorIteratorBase&, float)::{lambda(float)#1}, std::array<char*, 2ul>)",
            "vectorized_elementwise_kernel<…>",
        ),
        # constructors, destructors, clones, plain data symbols
        ("ns::Foo::Foo(int)", "Foo"),
        ("ns::Foo::~Foo()", "~Foo"),
        ("void f() [clone .cold]", "f"),
        ("ns::counter", "counter"),
        ("unsigned long ns::size<float>()", "size<float>"),
    ],
)
def test_short_names_of_tricky_cases(demangled: str, short: str) -> None:
    assert short_name(demangled) == short


@pytest.mark.parametrize(
    "name",
    ["add_kernel", "nccl:all_reduce", "train", "ROOT", "aten::mm", "layers.0 (Linear)",
     "/a/b.py:3@main", "_Z", "_Zbogus", "_ZN3foo", "_Z\x00x", "sm80_xmma_gemm_f32f32_kernel__5x_cublas", ""],
)  # fmt: skip
def test_names_that_are_not_mangled_or_do_not_demangle_stay_as_they_are(name: str) -> None:
    assert display_name(name) == name and display_name(name, full=True) == name


def test_without_libstdcxx_names_stay_raw(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine with no C++ runtime: nothing demangles, nothing fails."""
    demangler = names._Demangler()
    monkeypatch.setattr(names.ctypes.util, "find_library", lambda _n: None)
    monkeypatch.setattr(names.ctypes, "CDLL", _no_library)
    monkeypatch.setattr(names, "_DEMANGLER", demangler)
    names.demangle.cache_clear()
    names.display_name.cache_clear()
    try:
        mangled = FIXTURE_NAMES[0][0]
        assert display_name(mangled) == mangled and demangle(mangled) is None and not names.available()
    finally:
        names.demangle.cache_clear()
        names.display_name.cache_clear()


def _no_library(*_args: object, **_kwargs: object) -> object:
    raise OSError("no such library")


@needs_demangler
def test_web_profile_data_shows_short_names_and_keeps_full_and_raw() -> None:
    data = profile_data(hatchet.read(str(FIXTURES / "proton" / "proton_shadow.hatchet")), "p")
    assert len(data["names"]) == len(data["full_names"]) == len(data["raw_names"])
    rows = list(zip(data["names"], data["full_names"], data["raw_names"], strict=True))
    mangled, short = FIXTURE_NAMES[0]
    assert (short, demangle(mangled), mangled) in rows
    assert ("add_kernel", "add_kernel", "add_kernel") in rows
    assert not any(n.startswith("_Z") for n in data["names"])
    json.dumps(data)  # still plain JSON


@needs_demangler
def test_web_trace_keeps_recorded_names_and_adds_shown_ones(tmp_path: Path) -> None:
    from deuteron.formats import chrome_trace

    mangled, short = FIXTURE_NAMES[3]
    trace = tmp_path / "t.json"
    trace.write_text(
        json.dumps({"traceEvents": [
            {"ph": "X", "name": mangled, "cat": "kernel", "ts": 0, "dur": 1, "tid": 7},
            {"ph": "X", "name": "add_kernel", "cat": "kernel", "ts": 2, "dur": 1, "tid": 7},
        ]})
    )  # fmt: skip
    ref, _order = trace_ref(chrome_trace.read_columns(str(trace)), str(trace), "/x")
    shown = dict(zip(ref["names"], zip(ref["display_names"], ref["full_names"], strict=True), strict=True))
    assert shown[mangled] == (short, demangle(mangled))
    assert shown["add_kernel"] == ("add_kernel", "add_kernel")
