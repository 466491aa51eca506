"""Kernels ``torch.compile`` generated, placed under the modules they came from, by Inductor's own provenance.

A compiled model runs as one ``Torch-Compiled Region`` whose ``CompiledFunction`` (and
``CompiledFunctionBackward``) launch Inductor's fused Triton kernels one after another: no module
is called, so ``-c torch`` sees no module around them. Inductor knows where each kernel came from:
when it generates one it calls ``torch._inductor.debug.set_kernel_post_grad_provenance_tracing``
with the scheduler nodes fused into it, whose FX ``origins`` carry ``nn_module_stack`` (the module
path and class of each op), ``original_aten`` and ``stack_trace`` (the user's file and line).
This module listens at that call (the function is wrapped where Inductor's code generators
imported it, once they are imported: nothing is imported early) and keeps, per compiled graph
and kernel name, the modules, the aten ops and the source lines it fused (:data:`TABLE`). A graph
loaded from Inductor's caches generates no code, so while watching, the caches are off (a
compile takes its full time under ``-c torch``) unless the user set them.

When a profile is written, :func:`place` moves each such kernel below its ``CompiledFunction``
into the module frames eager mode would show (``model (LlamaModel) > layers.0 (LlamaDecoderLayer)
> ...``): the deepest module all its fused ops share. Inductor defines a kernel once and calls it
wherever the same code serves (one normalisation kernel for several layers): such a kernel goes
under the modules its call sites share, the layer index folded where only it differs
(``layers.{1,2,3} (LlamaDecoderLayer)``), since the profile counts its launches together. Each
kernel node also gets ``fused_ops`` and ``source_lines``. Extern kernels (cuBLAS GEMMs, attention)
are Inductor's calls of aten ops: they stay under their op, as torch names them.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

from deuteron.model.tree import Node, Profile

REGION = re.compile(r"^Torch-Compiled Region: (\S+)$")
FORWARD, BACKWARD = "CompiledFunction", "CompiledFunctionBackward"
GENERATORS = ("torch._inductor.codegen.triton", "torch._inductor.codegen.cpp", "torch._inductor.debug")
HOOK = "set_kernel_post_grad_provenance_tracing"
CACHES = {"TORCHINDUCTOR_FX_GRAPH_CACHE": "fx_graph_cache", "TORCHINDUCTOR_AUTOGRAD_CACHE": "autograd_cache"}
_SELF = re.compile(r"^L\['[^']*'\]\.?|^L__\w+?__\.?")  # the compiled module itself: L['self']
_LINE = re.compile(r'File "([^"]+)", line (\d+)')

# "compile_id:fwd|bwd:kernel name" -> {"modules": [[frame, ...] per fused op], "aten": [...], "lines": [...]}
TABLE: dict[str, dict[str, list[Any]]] = {}
_lock = threading.Lock()
_installed: list[Callable[[], None]] = []


def watch() -> None:
    """Listen to Inductor's provenance calls from now on (idempotent): wrapped at once where the code
    generators are imported already, else right after they are."""
    if _installed:
        return
    from deuteron.process.patches import after_import

    # Provenance exists only while Inductor generates code: a graph loaded from its caches
    # generates none. So the caches are off (unless the user set them), read when Inductor's
    # config is imported, or now if it is.
    for variable in CACHES:
        os.environ.setdefault(variable, "0")
    config = sys.modules.get("torch._inductor.config")
    if config is not None:
        for variable, attribute in CACHES.items():
            # a torch without that cache (torch 2.13 on the CPU has no autograd_cache) refuses the name
            if os.environ[variable] == "0" and hasattr(config, attribute):
                setattr(config, attribute, False)

    for name in GENERATORS:
        if name in sys.modules:
            _wrap(sys.modules[name])
        else:
            _installed.append(after_import(name, lambda name=name: _wrap(sys.modules[name])))  # type: ignore[misc]
    _installed.append(lambda: None)


def _wrap(module: Any) -> None:
    original = getattr(module, HOOK, None)
    if original is None or getattr(original, "_deuteron", False):
        return

    def provenance(node_schedule: Any, kernel_name: str, is_extern: bool = False) -> Any:
        try:
            record(node_schedule, kernel_name, is_extern)
        except Exception:  # a profiler never breaks the compile: provenance is then missing
            pass
        return original(node_schedule, kernel_name, is_extern)

    provenance._deuteron = True  # type: ignore[attr-defined]
    setattr(module, HOOK, provenance)


def _graph_key() -> str:
    """The compiled graph's id (``0/0``) and direction (forward or backward) being generated."""
    from torch._guards import CompileContext

    compile_id = CompileContext.current_compile_id()
    backward = False
    try:
        from torch._inductor.virtualized import V

        backward = bool(getattr(V.graph, "is_backward", False))
    except Exception:
        pass
    return f"{compile_id}:{'bwd' if backward else 'fwd'}"


def record(node_schedule: Any, kernel_name: str, is_extern: bool = False) -> None:
    """One call site of a generated kernel: the modules, aten ops and lines of the FX nodes it fused."""
    if is_extern:
        return  # an aten op's own kernel: torch's op frame names it already
    origins = [o for s in node_schedule if getattr(s, "node", None) is not None for o in s.node.origins]
    entry_modules, aten, lines = [], set(), set()
    for origin in origins:
        meta = getattr(origin, "meta", {})
        stack = meta.get("nn_module_stack") or meta.get("fwd_nn_module_stack")
        if stack:
            entry_modules.append(module_frames(stack.values()))
        target = meta.get("original_aten") or getattr(origin, "target", None)
        if target is not None and not isinstance(target, str):
            aten.add(str(getattr(target, "_overloadpacket", target)))
        frames = _LINE.findall(meta.get("stack_trace") or "")
        if frames:  # the innermost frame: the line of the op itself, not its callers'
            lines.add(f"{frames[-1][0]}:{frames[-1][1]}")
    key = f"{_graph_key()}:{kernel_name}"
    with _lock:
        entry = TABLE.setdefault(key, {"modules": [], "aten": [], "lines": []})
        entry["modules"].extend(m for m in entry_modules if m not in entry["modules"])
        entry["aten"] = sorted(set(entry["aten"]) | aten)
        entry["lines"] = sorted(set(entry["lines"]) | lines, key=_line_order)


def _line_order(line: str) -> tuple[str, int]:
    path, _, number = line.rpartition(":")
    return path, int(number) if number.isdigit() else 0


def module_frames(stack: Iterable[Any]) -> list[str]:
    """``nn_module_stack``'s values (outermost first: ``(path, class)``) as eager's frame names:
    each module's attribute path below its parent and its class, ``layers.0 (LlamaDecoderLayer)``.
    The compiled module itself (the empty path) is its compiled frame already, so left out."""
    frames: list[str] = []
    parent = ""
    for item in stack:
        path, kind = (item[0], item[1]) if isinstance(item, tuple) and len(item) > 1 else (item, "")
        path = _SELF.sub("", str(path))
        if not path:
            continue
        own = path[len(parent) + 1 :] if parent and path.startswith(parent + ".") else path
        name = getattr(kind, "__name__", None) or str(kind).rsplit(".", 1)[-1].strip("'>")
        frames.append(f"{own} ({name})" if name else own)
        parent = path
    return frames


def shared_frames(stacks: list[list[str]]) -> list[str]:
    """The frames every call site's ops share, outermost first; where the sites differ only in a
    layer's index (``layers.0``, ``layers.2``), that frame is folded (``layers.{0,2}``) and the
    frames below it still compared."""
    if not stacks:
        return []
    out: list[str] = []
    for level in zip(*stacks, strict=False):
        if len(set(level)) == 1:
            out.append(level[0])
            continue
        folded = _fold(set(level))
        if folded is None:
            break
        out.append(folded)
    return out


_INDEXED = re.compile(r"^(.*?)\.(\d+)( \(.*\))?$")


def _fold(frames: set[str]) -> str | None:
    """``{"layers.0 (L)", "layers.2 (L)"}`` -> ``"layers.{0,2} (L)"``; None when they differ otherwise."""
    parts = [_INDEXED.match(f) for f in frames]
    if not all(parts) or len({(p.group(1), p.group(3)) for p in parts if p}) != 1:
        return None
    first = parts[0]
    assert first is not None
    indices = sorted(int(p.group(2)) for p in parts if p)
    return f"{first.group(1)}.{{{','.join(map(str, indices))}}}{first.group(3) or ''}"


def place(profile: Profile, table: dict[str, dict[str, list[Any]]] | None = None) -> int:
    """Move every Inductor kernel found in ``table`` (default :data:`TABLE`) below its compiled
    function into the frames of the modules it fused, with its fused ops and source lines; returns
    how many kernel nodes moved. A profile with a compiled function gets the table in its metadata
    (``inductor_kernels``), so it can be placed again from its file; others are left as they are."""
    table = TABLE if table is None else table
    if not table:
        return 0
    with _lock:
        entries = {k: {**v, "frames": shared_frames(v["modules"])} for k, v in table.items()}
    by_name: dict[str, list[Any]] = {}  # "fwd:name": a backward runs outside its region's frame
    for key, entry in entries.items():
        by_name.setdefault(key.split(":", 1)[-1], []).append(entry)
    moved, found = 0, False
    stack: list[tuple[Node, str]] = [(profile.root, "")]
    while stack:
        node, compile_id = stack.pop()
        region = REGION.match(node.name)
        if region:
            compile_id = region.group(1)
        if node.name in (FORWARD, BACKWARD):
            found = True
            direction = "bwd" if node.name == BACKWARD else "fwd"
            moved += _place_under(profile, node, f"{compile_id}:{direction}", entries, by_name)
            continue
        stack.extend((child, compile_id) for child in list(node.children.values()))
    if found:
        profile.metadata["inductor_kernels"] = {
            k: {kk: v[kk] for kk in ("modules", "aten", "lines")} for k, v in table.items()
        }
    return moved


def _place_under(
    profile: Profile, function: Node, graph: str, entries: dict[str, Any], by_name: dict[str, list[Any]]
) -> int:
    """The kernels directly below one compiled function (``graph``: ``"0/0:fwd"``; its id is empty
    for a backward autograd ran outside the region, then a kernel name found in one graph only)."""
    moved = 0
    direction = graph.rsplit(":", 1)[-1]
    for key, kernel in list(function.children.items()):
        entry = entries.get(f"{graph}:{kernel.name}")
        if entry is None:
            alike = by_name.get(f"{direction}:{kernel.name}", [])
            if len(alike) != 1:
                continue
            entry = alike[0]
        kernel.metrics["fused_ops"] = ", ".join(entry["aten"])
        kernel.metrics["source_lines"] = ", ".join(_short(line) for line in entry["lines"])
        if not entry["frames"]:
            continue
        parent = function
        for frame in entry["frames"]:
            parent = parent.child(frame)
        del function.children[key]
        _graft(profile, parent, kernel)
        moved += 1
    return moved


def _graft(profile: Profile, parent: Node, node: Node) -> None:
    """Put ``node`` (with its subtree) under ``parent``, summing into a node of the same name."""
    same = parent.children.get((node.name, node.type))
    if same is None:
        parent.children[(node.name, node.type)] = node
        return
    profile.add_metrics(same, node.metrics)
    for child in list(node.children.values()):
        _graft(profile, same, child)


def _short(line: str) -> str:
    path, _, number = line.rpartition(":")
    return f"{path.rsplit('/', 1)[-1]}:{number}"
