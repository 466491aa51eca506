"""A reproducer's text: one recorded launch as the Python file a kernel engineer would write.

The file reads top to bottom as such a file does: where it runs (chosen before ``triton`` is
imported, since ``triton.jit`` reads ``TRITON_INTERPRET`` when each kernel is defined), the imports
and constants the kernel reads, the kernel's source and its helpers' verbatim, the buffers its
tensors view (values from the ``.npz`` beside it, or made from statistics past the record's byte
limit), the launch itself, and ``--check``, which compares every buffer after the launch with the
recorded values. Nothing in it imports Deuteron: it is the user's to change and share.

Every name and expression that comes from the record is checked before it is written
(:mod:`deuteron.formats.launch_record` checks identifiers and import lines; values are rendered
here from their kinds), so a damaged record cannot put other code into the file than the kernel
source it carries.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from typing import Any

from deuteron.repro.errors import ReproError
from deuteron.repro.templates import CHECK, HELPERS, LIKE, TOLERANCES, main_function


@dataclass
class Title:
    """Where the launch comes from, as the file's docstring and summary say it."""

    kernel: str
    number: int
    total: int
    profile: str  # the profile, as the user named it
    values: str  # the .npz beside the file, by name


def render(kernel: dict[str, Any], launch: dict[str, Any], title: Title) -> str:
    """The reproducer's text (see the module's text); ReproError when the launch cannot be rebuilt."""
    if launch.get("grid") is None:
        raise ReproError(
            f"launch {title.number} of {title.kernel}: its grid could not be resolved "
            f"({launch.get('grid_error')})"
        )
    buffers = launch["buffers"]
    parts = [_docstring(kernel, launch, title), _preamble(kernel, launch), _sources(kernel, launch)]
    parts.append(
        "# The recorded values: each buffer's before the launch, and as NAME.after those it wrote after it.\n"
    )
    parts.append(f'VALUES = Path(__file__).with_name("{_plain_name(title.values)}")\n\n\n')
    parts.append(HELPERS + (LIKE if any(b["before"] is None for b in buffers) else ""))
    parts.append(_buffers(buffers))
    parts.append(_launch(kernel, launch))
    parts.append(_expected(launch))
    parts.append(CHECK)
    summary = f"{title.kernel}: launch {title.number} of {title.total}, grid {_tuple(launch['grid'])}"
    parts.append(main_function(summary, f"Launch {title.number} of {title.total} of {title.kernel}."))
    return "".join(parts)


def _plain_name(name: str) -> str:
    if not all(c.isalnum() or c in "._-" for c in name):
        raise ReproError(f"{name!r}: give the reproducer a plain file name (letters, digits, '.', '_', '-')")
    return name


def _doc(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"""', "'''")


def _docstring(kernel: dict[str, Any], launch: dict[str, Any], title: Title) -> str:
    stem = title.values.removesuffix(".npz")
    lines = [
        f"Launch {title.number} of {title.total} of {title.kernel}, recorded by "
        f"`deuteron run --record-launches` ({title.profile}).",
        "",
        "Written by `deuteron repro`: the kernel's source as it was launched, its arguments as the kernel",
        f"saw them (their values are in {title.values}, beside this file) and the launch, alone. Change",
        "anything and rerun it:",
        "",
        f"    python {stem}.py            # the launch, then one line: where it ran and how long it took",
        f"    python {stem}.py --check    # and what it wrote against what it wrote when recorded",
        "",
        "`deuteron run`, `deuteron check` and `deuteron explain` take this file as they take any script.",
    ]
    notes = [*kernel.get("notes", []), *launch.get("notes", [])]
    tuner = launch.get("tuner")
    if isinstance(tuner, dict) and any(b.get("written") is False for b in launch["buffers"]):
        notes.append(
            "the autotuner's benchmark launches ran just before this one: a buffer they wrote already "
            "held these values, so it shows as unchanged (it is compared all the same)"
        )
    if launch.get("error"):
        notes.append(f"when recorded, this launch raised {launch['error']}")
    regenerated = [b["name"] for b in launch["buffers"] if b["before"] is None]
    if regenerated:
        notes.append(
            f"{', '.join(regenerated)}: past the record's byte limit (DEUTERON_RECORD_BYTES), so made "
            "from the recorded statistics (min, max, mean, std), not the recorded values"
        )
    if notes:
        lines += ["", "Notes:"]
        for note in notes:
            lines += textwrap.wrap(note, 96, initial_indent="- ", subsequent_indent="  ")
    return '"""' + _doc("\n".join(lines)) + '\n"""\n\n'


def _preamble(kernel: dict[str, Any], launch: dict[str, Any]) -> str:
    device = launch["device"]
    if device == "cuda":
        where = [
            "# Recorded on a GPU (cuda): it runs on the GPU when there is one and TRITON_INTERPRET is not 1,",
            "# else in Triton's interpreter on the CPU.",
        ]
    elif device == "cpu":
        where = ["# Recorded on the CPU, in Triton's interpreter: it runs there again (TRITON_INTERPRET=1)."]
    else:
        where = [
            f"# Recorded on {_comment(device)}: it runs on the CPU, in Triton's interpreter "
            "(TRITON_INTERPRET=1)."
        ]
    imports = ["import triton", "import triton.language as tl"]
    imports += [line for line in kernel.get("imports", []) if line not in imports]
    constants = [f"{name} = {_expression(expr)}" for name, expr in kernel.get("constants", [])]
    return "\n".join([
        "import argparse", "import os", "import time", "from pathlib import Path", "",
        "import numpy as np", "import torch", "",
        *where,
        f'RECORDED_ON = "{"cuda" if device == "cuda" else "cpu"}"',
        'interpreting = os.environ.get("TRITON_INTERPRET") == "1"',
        'if RECORDED_ON == "cuda" and torch.cuda.is_available() and not interpreting:',
        '    DEVICE = "cuda"',
        "else:",
        '    DEVICE = "cpu"',
        '    os.environ.setdefault("TRITON_INTERPRET", "1")  # read as each kernel below is defined',
        "# (Triton's interpreter alone lacks what Deuteron mends in it: libdevice, bf16 arithmetic, a",
        "# float argument's .to(); `deuteron run` and `deuteron check` of this file have them.)",
        "",
        *imports,
        *([""] + constants if constants else []),
        "", "", "",
    ])  # fmt: skip


def _expression(text: str) -> str:
    """A constant's expression from the record, refused unless it is a literal, a ``tl.constexpr``
    of one or a ``tl`` dtype (what :mod:`deuteron.triton.runtime.kernel_source` writes)."""
    import ast

    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        raise ReproError(f"the record's constant {text!r} is not Python") from None
    inner = (
        node.args[0]
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "tl.constexpr" and len(node.args) == 1
        else node
    )
    if isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name) and inner.value.id == "tl":
        return text
    if isinstance(inner, ast.Call) and ast.unparse(inner.func) == "float" and len(inner.args) == 1:
        inner = inner.args[0]
    try:
        ast.literal_eval(inner)
    except (ValueError, SyntaxError, TypeError):
        raise ReproError(f"the record's constant {text!r} is not a constant") from None
    return text


def _sources(kernel: dict[str, Any], launch: dict[str, Any]) -> str:
    out = []
    for dropped in kernel.get("dropped", []):
        out.append("# Left out: " + _comment(dropped) + "\n")
    tuner = launch.get("tuner")
    if isinstance(tuner, dict):
        chosen = ", ".join(f"{_comment(k)}={v!r}" for k, v in dict(tuner.get("config") or {}).items())
        key = ", ".join(_comment(k) for k in tuner.get("key") or [])
        configs = _comment(tuner.get("configs"))
        out.append(
            f"# The autotuner chose {chosen} (of {configs} configs, key: {key}): the launch passes it.\n"
        )
        if tuner.get("pre_hook"):
            out.append(
                "# Its pre_hook ran before the values were recorded: its effect is in them (not run here).\n"
            )
    if out:
        out.append("\n")
    for i, function in enumerate(kernel["functions"]):
        where = _comment(f"{function.get('file', '?')}:{function.get('line', '?')}")
        out.append(f"# {function['name']}, from {where}\n{function['source'].rstrip()}\n\n\n")
        if i == len(kernel["functions"]) - 1:
            for name, target in kernel.get("aliases", []):
                out.append(f"{name} = {target}\n")
    return "".join(out) + ("\n\n" if kernel.get("aliases") else "")


def _comment(text: object) -> str:
    """Text from the record on one comment line: its whitespace, newlines included, made spaces."""
    return " ".join(str(text).split())


def _buffers(buffers: list[dict[str, Any]]) -> str:
    lines = [
        "",
        "",
        "def buffers():",
        '    """Every buffer the launch\'s tensors view, by name."""',
        "    return {",
    ]
    for b in buffers:
        dtype = f"torch.{b['dtype']}"
        if b["before"] is not None:
            lines.append(
                f'        "{b["name"]}": recorded("{b["name"]}", {dtype}, {b["size"]}, pad={b["pad"]}),'
            )
        else:
            s = b.get("stats") or {}
            stats = ", ".join(f"{k}={_short(s.get(key, 0))}" for k, key in _STATS)
            lines.append(f'        "{b["name"]}": like({dtype}, {b["size"]}, pad={b["pad"]}, {stats}),')
    lines += ["    }", "", "", ""]
    return "\n".join(lines)


_STATS = (("low", "min"), ("high", "max"), ("mean", "mean"), ("std", "std"))


def _short(value: Any) -> str:
    """A statistic, to six significant digits (it only shapes made-up values)."""
    if isinstance(value, float) and math.isfinite(value):
        return f"{value:.6g}"
    return _number(value)


def _number(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return f'float("{value}")'
    return repr(value)


def _value(value: dict[str, Any], buffers: list[dict[str, Any]]) -> str:
    """A recorded value as Python source."""
    kind = value["kind"]
    if kind == "tensor":
        b = buffers[value["buffer"]]["name"]
        return f'view(bufs["{b}"], {_tuple(value["shape"])}, {_tuple(value["strides"])}, {value["offset"]})'
    if kind in ("int", "bool"):
        return repr(value["value"])
    if kind == "float":
        return _number(float(value["value"]))
    if kind == "str":
        return repr(value["value"])
    if kind == "none":
        return "None"
    if kind == "tuple":
        items = [_value(v, buffers) for v in value["items"]]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if kind == "tl_dtype":
        return f"tl.{value['name']}"
    if kind == "torch_dtype":
        return f"torch.{value['name']}"
    raise ReproError(f"an argument is a {value.get('type', kind)}, which a reproducer cannot rebuild")


def _tuple(numbers: list[int]) -> str:
    return "(" + ", ".join(str(int(n)) for n in numbers) + ("," if len(numbers) == 1 else "") + ")"


def _launch(kernel: dict[str, Any], launch: dict[str, Any]) -> str:
    """``def launch(bufs)``: the tensors and scalars by their parameters' names, then the launch."""
    buffers, constexprs = launch["buffers"], set(kernel.get("constexprs", []))
    taken = {"bufs", "view", "torch", "tl", "triton", "np", kernel["name"]}
    taken |= {f["name"] for f in kernel["functions"]} | {c[0] for c in kernel.get("constants", [])}
    lines = [
        "def launch(bufs):",
        '    """The recorded launch, on `bufs`: its grid, arguments, constexprs and options."""',
    ]
    positional: list[str] = []
    keywords: list[str] = []
    for name, value in launch["args"]:
        text = _value(value, buffers)
        if name in constexprs or keywords:
            keywords.append(f"{name}={text}")
            continue
        local = name if name not in taken else f"arg_{name}"
        lines.append(f"    {local} = {text}")
        positional.append(local)
    keywords += [f"{name}={_value(value, buffers)}" for name, value in launch["options"]]
    call = f"    {kernel['name']}[{_tuple(launch['grid'])}]("
    lines += _wrapped(call, [*positional, *keywords])
    return "\n".join(lines) + "\n"


def _wrapped(head: str, items: list[str]) -> list[str]:
    one = head + ", ".join(items) + ")"
    if len(one) <= 100:
        return [one]
    lines, current = [head], list[str]()  # the arguments fill lines of up to 100 characters
    for item in items:
        if current and 8 + len(", ".join([*current, item])) > 100:
            lines.append("        " + ", ".join(current) + ",")
            current = []
        current.append(item)
    return [*lines, "        " + ", ".join(current), "    )"]


def _expected(launch: dict[str, Any]) -> str:
    buffers, device = launch["buffers"], launch["device"]
    expected, unchecked = [], []
    shapes = [f'"{buffers[i]["name"]}": {_tuple(shape)}' for i, shape in _whole_tensors(launch).items()]
    for b in buffers:
        if b["before"] is None:
            continue
        if b.get("written") and b.get("after") is None:
            unchecked.append(b["name"])
            continue
        key = f"{b['name']}.after" if b.get("written") else b["name"]
        expected.append(f'    "{b["name"]}": "{key}",')
    regenerated = [b["name"] for b in buffers if b["before"] is None]
    lines = [
        "",
        "",
        "# What --check compares each buffer with after the launch: the values recorded after it",
        '# ("NAME.after") where the kernel wrote, the values from before it where it did not.',
        "EXPECTED = {",
        *expected,
        "}",
        "# A buffer that is one whole tensor: a mismatch in it is shown at that tensor's index.",
        f"SHAPES = {{{', '.join(reversed(shapes))}}}",
        f"REGENERATED = {regenerated!r}  # made from statistics: nothing to compare with",
        f"UNCHECKED = {unchecked!r}  # written, but its values after the launch were past the byte limit",
    ]
    if device == "cuda":
        lines.append(
            "# Recorded on a GPU and rerun in the interpreter, tl.dot differs more (tf32 there, fp32 here)."
        )
    return "\n".join([*lines, TOLERANCES, ""])


def _whole_tensors(launch: dict[str, Any]) -> dict[int, list[int]]:
    """The buffers that are exactly one contiguous tensor argument, and its shape."""
    found: dict[int, list[int]] = {}
    todo = [value for _, value in launch["args"]]
    while todo:
        value = todo.pop()
        if value["kind"] == "tuple":
            todo.extend(value["items"])
        if value["kind"] != "tensor" or value["offset"] != 0:
            continue
        shape, strides, expected = value["shape"], value["strides"], 1
        for n, stride in reversed(list(zip(shape, strides, strict=True))):
            if n != 1 and stride != expected:
                break
            expected *= n
        else:
            if expected == launch["buffers"][value["buffer"]]["size"]:
                found.setdefault(value["buffer"], shape)
    return found
