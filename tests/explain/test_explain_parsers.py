"""The explain parsers and the occupancy model on text in the exact shapes the tools print."""

from __future__ import annotations

import pytest

from deuteron.explain.cross_compile import parse_pass_dump
from deuteron.explain.errors import ExplainError
from deuteron.explain.occupancy import occupancy
from deuteron.explain.sass import (
    basic_blocks,
    global_access_bits,
    instruction_mix,
    parse_nvdisasm,
    parse_res_usage,
)
from deuteron.explain.stages import at_line, llir_lines, mlir_lines, ptx_lines, sass_lines, source_line
from deuteron.explain.targets import parse_target

# LLVM's NVPTX printer gives each line of a multi-line inline-asm block the next source line
# (27, 28, 29, ... below); the real load is on line 27 and must map there.
PTX = """\
\t.loc\t1 26 0                          // k.py:26:0
\tld.param.b64 \t%rd17, [mm_param_0];
\t.loc\t1 27 9                          // k.py:27:9
\t// begin inline asm
\t.loc\t1 27 9                          // k.py:27:9
\tmov.u32 %r1, 0x0;
\t.loc\t1 28 9                          // k.py:28:9
\tmov.u32 %r2, 0x0;
\t.loc\t1 29 9                          // k.py:29:9
\tld.global.v2.b32 { %r1, %r2 }, [ %rd1 + 0 ];
\t// end inline asm
\t.loc\t1 30 5                          // k.py:30:5
\tst.global.b32 [ %rd2 + 0 ], { %r1 };
\t.file\t1 "/src" "k.py"
"""


def test_ptx_inlined_at_chains_to_the_kernel_line() -> None:
    ptx = (
        "\t.loc\t1 12 9\n\tmov.u32 %r0, 0;\n"
        "\t.loc\t2 314 12, function_name $L__info_string0, inlined_at 1 12 9 // standard.py:314:12\n"
        "\tadd.f32 %f1, %f2, %f3;\n"
        "\t.loc\t2 287 12, function_name $L__info_string0, inlined_at 2 314 12 // standard.py:287:12\n"
        "\tmax.f32 %f4, %f5, %f6;\n"
        '\t.file\t1 "/src/k.py"\n\t.file\t2 "/triton/standard.py"\n'
    )
    lines = {ir.text.strip().split()[0]: ir for ir in ptx_lines(ptx) if ir.frames}
    assert lines["add.f32"].frames == (("/triton/standard.py", 314), ("/src/k.py", 12))
    # two levels: 287 inlined at 314, which itself is inlined at the kernel's line 12
    assert lines["max.f32"].frames == (
        ("/triton/standard.py", 287),
        ("/triton/standard.py", 314),
        ("/src/k.py", 12),
    )
    assert source_line(lines["max.f32"], "/src/k.py") == 12


def test_ptx_inline_asm_block_maps_to_its_first_loc() -> None:
    lines = ptx_lines(PTX)
    load = next(ir for ir in lines if "ld.global" in ir.text)
    assert load.frames == (("/src/k.py", 27),)
    store = next(ir for ir in lines if "st.global" in ir.text)
    assert source_line(store, "k.py") == 30
    assert [ir.text.strip() for ir in at_line(lines, "/elsewhere/k.py", 27)] == [
        "mov.u32 %r1, 0x0;",
        "mov.u32 %r2, 0x0;",
        "ld.global.v2.b32 { %r1, %r2 }, [ %rd1 + 0 ];",
    ]


# libdevice's sinf as Triton 3.9 prints it: the carry chain's asm block has no ``.loc`` on its first
# text line (``{``), so the lines inside are 13 and 14 for a call on line 12, and LLVM prints no
# new ``.loc`` after the block: the slow path that follows must stay on line 12.
PTX_ASM_AFTER = """\
\t.loc\t1 12 15                         // k.py:12:15
\tld.global.nc.b32 \t%r88, [%rd13];
\t// begin inline asm
\t{
\t.loc\t1 13 15                         // k.py:13:15
\tmad.lo.cc.u32   %r87, %r88, %r89, %r427;
\t.loc\t1 14 15                         // k.py:14:15
\tmadc.hi.u32     %r427, %r88, %r89,  0;
\t}
\t// end inline asm
\tst.local.b32 \t[%r426], %r87;
\t.loc\t1 0 15                          // k.py:0:15
\tmov.b32 \t%r109, 0f00000000;
\t.file\t1 "/src/k.py"
"""


def test_ptx_inline_asm_lines_do_not_leak_past_the_block() -> None:
    lines = {ir.text.strip().split()[0]: ir for ir in ptx_lines(PTX_ASM_AFTER)}
    assert lines["mad.lo.cc.u32"].frames == (("/src/k.py", 12),)
    assert lines["madc.hi.u32"].frames == (("/src/k.py", 12),)
    assert lines["st.local.b32"].frames == (("/src/k.py", 12),)
    assert lines["mov.b32"].frames == ()  # line 0: code LLVM merged from several lines


def test_ptx_inlined_at_names_the_latest_call_site_of_that_location() -> None:
    """Two calls of ``tl.sum`` (lines 15 and, through a helper on line 7, 17) both inline
    standard.py:287 at standard.py:314: each instance follows the 314 printed just before it."""
    ptx = (
        "\t.loc\t1 15 9\n\tmov.u32 %r0, 0;\n"
        "\t.loc\t2 314 12, function_name $L__info_string0, inlined_at 1 15 9\n\tbar.sync 0;\n"
        "\t.loc\t2 287 12, function_name $L__info_string0, inlined_at 2 314 12\n\tadd.f32 %f1, %f2, %f3;\n"
        "\t.loc\t1 7 12, function_name $L__info_string0, inlined_at 1 17 9\n\tmov.u32 %r1, 0;\n"
        "\t.loc\t2 314 12, function_name $L__info_string0, inlined_at 1 7 12\n\tbar.sync 1;\n"
        "\t.loc\t2 287 12, function_name $L__info_string0, inlined_at 2 314 12\n\tfma.rn.f32 %f4, %f5, %f6;\n"
        '\t.file\t1 "/src/k.py"\n\t.file\t2 "/triton/language/standard.py"\n'
    )
    lines = {ir.text.strip().split()[0]: ir for ir in ptx_lines(ptx) if ir.frames}
    assert lines["add.f32"].frames[-1] == ("/src/k.py", 15)
    assert lines["fma.rn.f32"].frames == (
        ("/triton/language/standard.py", 287),
        ("/triton/language/standard.py", 314),
        ("/src/k.py", 7),
        ("/src/k.py", 17),
    )


def test_ptx_without_inlined_at_takes_the_chain_from_llvms_comment() -> None:
    """Triton 3.6's PTX: the ``.loc`` names only the innermost line; the comment has the chain."""
    ptx = (
        "\t.loc\t2 263 15  // standard.py:263:15 @[ standard.py:293:36 @[ k.py:21:16 ] ]\n"
        "\tadd.f32 %f1, %f2, %f3;\n"
        '\t.file\t1 "/src/k.py"\n\t.file\t2 "/site-packages/triton/language/standard.py"\n'
    )
    add = next(ir for ir in ptx_lines(ptx) if ir.frames)
    assert add.frames == (
        ("/site-packages/triton/language/standard.py", 263),
        ("/site-packages/triton/language/standard.py", 293),
        ("/src/k.py", 21),
    )


MLIR = """\
#loc = loc("/src/k.py":10:1)
module {
  tt.func public @k(%X: !tt.ptr<f32> loc("X"(#loc))) {
    %0 = tt.get_program_id x : i32 loc(#loc1)
    %1 = arith.addf %a, %b : f32 loc(#loc4)
    %2 = tt.load %p : !tt.ptr<f32> loc(#loc5)
  } loc(#loc)
} loc(#loc)
#loc1 = loc("/src/k.py":11:10)
#loc2 = loc("/src/helpers.py":3:5)
#loc3 = loc("/src/k.py":12:7)
#loc4 = loc(callsite(#loc2 at #loc3))
#loc5 = loc("x"(#loc6))
#loc6 = loc(fused[#loc1, #loc3])
"""


def test_mlir_locations_named_callsite_and_fused() -> None:
    lines = mlir_lines(MLIR)
    by_op = {ir.text.split("=")[1].split()[0]: ir for ir in lines if " = " in ir.text}
    assert by_op["tt.get_program_id"].frames == (("/src/k.py", 11),)
    # an op inlined from a helper: the helper's line first, then the kernel line that called it
    assert by_op["arith.addf"].frames == (("/src/helpers.py", 3), ("/src/k.py", 12))
    assert source_line(by_op["arith.addf"], "/src/k.py") == 12
    assert by_op["tt.load"].frames == (("/src/k.py", 11),)
    assert not any(ir.text.startswith("#loc") for ir in lines)
    assert "loc(" not in by_op["tt.load"].text


LLIR = """\
define void @k(ptr addrspace(1) %0) !dbg !4 {
  %2 = fadd float %a, %b, !dbg !9
  ret void, !dbg !8
}
!3 = !DIFile(filename: "k.py", directory: "/src")
!4 = distinct !DISubprogram(name: "k", linkageName: "k", scope: !3, file: !3, line: 10, unit: !0)
!5 = !DIFile(filename: "helpers.py", directory: "/src")
!6 = distinct !DISubprogram(name: "h", scope: !5, file: !5, line: 2, unit: !0)
!7 = !DILocation(line: 12, column: 7, scope: !4)
!8 = !DILocation(line: 13, column: 5, scope: !4)
!9 = !DILocation(line: 3, column: 5, scope: !6, inlinedAt: !7)
"""


def test_llvm_debug_locations_follow_inlined_at() -> None:
    lines = llir_lines(LLIR)
    add = next(ir for ir in lines if "fadd" in ir.text)
    assert add.frames == (("helpers.py", 3), ("k.py", 12))
    ret = next(ir for ir in lines if "ret void" in ir.text)
    assert ret.frames == (("k.py", 13),)


NVDISASM = """\
.text.mm:
\t//## File ".nv_debug_ptx_txt", line 2
        /*0000*/                   LDC R1, c[0x0][0x28] ;
\t//## File ".nv_debug_ptx_txt", line 10
        /*0170*/                   LDG.E.128 R12, desc[UR10][R20.64+0x800] ;
        /*0180*/              @!P0 LDG.E R4, desc[UR10][R20.64] ;
\t//## File ".nv_debug_ptx_txt", line 13
        /*0190*/                   STG.E.U16 desc[UR4][R4.64], R8 ;
        /*01a0*/                   HGMMA.64x64x16.F32 R24, gdesc[UR4], RZ, !UPT ;
        /*01b0*/                   STL [R1+0x4], R3 ;
"""


def test_sass_with_ptx_lines_widths_and_mix() -> None:
    instrs = parse_nvdisasm(NVDISASM)
    assert [i.offset for i in instrs] == [0x0, 0x170, 0x180, 0x190, 0x1A0, 0x1B0]
    assert instrs[2].opcode == "LDG.E" and instrs[2].ptx_line == 10
    assert [global_access_bits(i) for i in instrs] == [None, 128, 32, 16, None, None]
    mix = instruction_mix(instrs)
    assert mix["tensor_core"] == 1 and mix["tensor_core_ops"] == {"HGMMA": 1}
    assert mix["global_loads"] == {"32-bit": 1, "128-bit": 1} and mix["global_stores"] == {"16-bit": 1}
    assert mix["local_stores"] == 1 and mix["total"] == 6
    rows = sass_lines(instrs, ptx_lines(PTX))
    assert source_line(rows[1], "k.py") == 27  # PTX line 10 is the inline-asm load of line 27


NVDISASM_BLOCKS = """\
k:
.text.k:
        /*0000*/                   ISETP.GE.AND P0, PT, R5, 105615, PT ;
        /*0010*/              @!P0 BRA `(.L_x_1) ;
        /*0020*/                   FMUL R4, RZ, R14 ;
.L_x_1:
        /*0030*/                   FFMA R2, R3, R4, R5 ;
        /*0040*/                   EXIT ;
        /*0050*/                   BRA `(.L_x_2);
"""


def test_sass_basic_blocks_split_at_labels_and_after_branches() -> None:
    instrs = parse_nvdisasm(NVDISASM_BLOCKS)
    assert [i.label for i in instrs] == [True, False, False, True, False, False]
    assert basic_blocks(instrs) == [0, 0, 1, 2, 2, 3]


def test_resource_usage_line() -> None:
    text = (
        " Function mm:\n  REG:59 STACK:16 SHARED:1024 LOCAL:8 CONSTANT[0]:568 TEXTURE:0 SURFACE:0 SAMPLER:0\n"
    )
    res = parse_res_usage(text)
    assert (res.registers, res.stack, res.static_shared, res.local) == (59, 16, 1024, 8)
    with pytest.raises(ExplainError):
        parse_res_usage("Resource usage:\n Common:\n  GLOBAL:0\n")


def test_pass_dump_split() -> None:
    dump = (
        "// -----// IR Dump Before TritonCombineOps (triton-combine) "
        "('builtin.module' operation) //----- //\n"
        "module { A }\n\n"
        "// -----// IR Dump Before CanonicalizerPass: canonicalize{max-iterations=10} "
        "('tt.func' operation: @k) //----- //\n"
        "tt.func @k { B }\n"
    )
    passes = parse_pass_dump(dump)
    assert [(p.index, p.name, p.scope) for p in passes] == [
        (0, "TritonCombineOps", "builtin.module"),
        (1, "CanonicalizerPass", "tt.func @k"),
    ]
    assert passes[0].ir_before == "module { A }\n" and passes[1].ir_before == "tt.func @k { B }\n"


@pytest.mark.parametrize(
    ("arch", "warps", "regs", "shared", "blocks", "limiter"),
    [
        # 64 regs x 32 lanes = 2048 per warp: 8 warps per 16K sub-partition, 32 per SM, 8 blocks of 4
        (90, 4, 64, 24576, 8, "registers"),
        # 255 regs round up to 8192 per warp: 2 warps per sub-partition, 8 per SM, 2 blocks
        (90, 4, 255, 512, 2, "registers"),
        # 100 KB + 1 KB reserved per block: 2 blocks in 228 KB
        (90, 4, 32, 100 * 1024, 2, "shared memory"),
        # 32 regs: 64 warps fit, so the 64-warp cap on sm_90 limits to 16 blocks of 4
        (90, 4, 32, 0, 16, "warps"),
        # sm_86: 48 warps per SM
        (86, 8, 32, 0, 6, "warps"),
        # more shared memory than one block may have: nothing fits
        (80, 4, 32, 200 * 1024, 0, "shared memory"),
        # one-warp blocks on sm_80 stop at the 32-block cap
        (80, 1, 16, 0, 32, "blocks"),
    ],
)
def test_occupancy(arch: int, warps: int, regs: int, shared: int, blocks: int, limiter: str) -> None:
    occ = occupancy(arch, warps, regs, shared)
    assert (occ.blocks_per_sm, occ.limiter) == (blocks, limiter)
    assert occ.warps_per_sm == blocks * warps


def test_target_names() -> None:
    assert parse_target("cuda:90").name == "cuda:90"
    assert parse_target("sm_80").arch == 80 and parse_target("SM90A").arch == 90
    for bad in ("cuda:75", "cuda", "metal:3", ""):
        with pytest.raises(ExplainError):
            parse_target(bad)
