"""Frame names a person can read: C++ kernel names demangled, and shortened to the kernel's own name.

Profiles of PyTorch, cuBLAS or CUTLASS work hold the kernels' mangled names
(``_ZN2at6native29vectorized_elementwise_kernelILi4E...``), which are what the files keep (they are
never rewritten: proton-viewer reads them too). Here they are demangled by the C++ runtime's own
``__cxa_demangle`` (libstdc++, the Itanium ABI's demangler; once per distinct name) and shortened by a
small bracket parser over the demangled text:

- :func:`demangle`: the full demangled text, or None when the name is not mangled or will not demangle;
- :func:`short_name`: a demangled text without its return type, parameter list and namespaces, its
  template arguments collapsed to ``<…>`` (``vectorized_elementwise_kernel<…>``);
- :func:`display_name`: what a view shows for a frame name: the short form (or, ``full``, the whole
  demangled text) of a mangled C++ name, any other name (a Triton kernel, a scope, a Python frame) as it is.

Without libstdc++ every name stays as it is. Imports nothing of Deuteron.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import re
from functools import lru_cache
from typing import Any

ELLIPSIS = "…"
_OPEN = {"<": ">", "(": ")", "[": "]", "{": "}"}
_CLOSE = {v: k for k, v in _OPEN.items()}
# Operator names after ``operator``, longest first so ``<<=`` is not read as ``<`` then ``<=``.
_OPERATORS = sorted(
    ["()", "[]", "<=>", "<<=", ">>=", "->*", "->", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
     "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "+", "-", "*", "/", "%", "^", "&",
     "|", "~", "!", "=", "<", ">", ","],
    key=len,
    reverse=True,
)  # fmt: skip
_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$")


class _Demangler:
    """libstdc++'s ``__cxa_demangle`` and libc's ``free`` through ctypes, loaded on first use; a
    machine without libstdc++ demangles nothing."""

    def __init__(self) -> None:
        self._function: Any = None
        self._free: Any = None
        self._loaded = False

    def _load(self) -> None:
        self._loaded = True
        try:
            library = ctypes.CDLL(ctypes.util.find_library("stdc++") or "libstdc++.so.6")
            # getattr: inside a class, a literal ``.__cxa_demangle`` would be name-mangled
            function = getattr(library, "__cxa_demangle")  # noqa: B009
            status = ctypes.POINTER(ctypes.c_int)
            function.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, status]
            function.restype = ctypes.c_void_p
            free = ctypes.CDLL(None).free
            free.argtypes = [ctypes.c_void_p]
            free.restype = None
        except (OSError, AttributeError, TypeError):
            return
        self._function, self._free = function, free

    def __call__(self, symbol: str) -> str | None:
        if not self._loaded:
            self._load()
        if self._function is None:
            return None
        try:
            raw = symbol.encode("utf-8")
        except UnicodeEncodeError:
            return None
        if b"\0" in raw:
            return None
        status = ctypes.c_int(1)
        out = self._function(raw, None, None, ctypes.byref(status))
        if not out:
            return None
        try:
            text = ctypes.string_at(out).decode("utf-8", "replace")
        finally:
            self._free(out)
        return text if status.value == 0 and text else None


_DEMANGLER = _Demangler()


def available() -> bool:
    """Whether this machine has a C++ demangler (libstdc++)."""
    return _DEMANGLER("_Z1fv") is not None


def is_mangled(name: str) -> bool:
    """An Itanium-ABI C++ symbol: ``_Z`` then more (``__Z`` as macOS writes them)."""
    return len(name) > 2 and (name.startswith("_Z") or name.startswith("__Z"))


@lru_cache(maxsize=65536)
def demangle(name: str) -> str | None:
    """The demangled text of a mangled C++ name; None for any other name or one that will not
    demangle (or with no libstdc++ here)."""
    if not is_mangled(name):
        return None
    return _DEMANGLER(name[1:] if name.startswith("__Z") else name)


def _operator_end(text: str, i: int) -> int:
    """Where the operator name starting at ``text[i]`` (``operator...``) ends."""
    j = i + len("operator")
    for op in _OPERATORS:
        if text.startswith(op, j):
            return j + len(op)
    if text.startswith('""', j):  # a literal operator: operator"" _km
        j += 2
        while j < len(text) and (text[j] in _WORD or text[j] == " "):
            j += 1
        return j
    # operator new / delete (maybe []), or a conversion: operator unsigned long, operator char*
    k = j
    depth = 0
    while k < len(text):
        c = text[k]
        if c in "<[":
            depth += 1
        elif c in ">]":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and (c == "(" or text.startswith("::", k)):
            break
        k += 1
    return k


def _top_level(text: str) -> list[tuple[str, int, int]]:
    """The text as top-level pieces: ``("word", start, end)`` runs outside brackets, ``(open, start,
    end)`` bracketed groups (nested ones inside), ``("::", ...)`` and ``(" ", ...)`` separators.
    ``operator<``, ``operator()`` and friends are words, so their brackets do not count."""
    pieces: list[tuple[str, int, int]] = []
    i, n = 0, len(text)
    word_start = -1

    def close_word(at: int) -> None:
        nonlocal word_start
        if word_start >= 0:
            pieces.append(("word", word_start, at))
            word_start = -1

    while i < n:
        c = text[i]
        if (
            text.startswith("operator", i)
            and (i == 0 or text[i - 1] not in _WORD)
            and (i + 8 >= n or text[i + 8] not in _WORD)
        ):
            if word_start < 0:
                word_start = i
            i = _operator_end(text, i)
            if text.startswith(" <", i):  # a template operator: operator< <int>
                i += 1
            continue
        if c in _OPEN:
            close_word(i)
            end = _group_end(text, i)
            pieces.append((c, i, end))
            i = end
            continue
        if text.startswith("::", i):
            close_word(i)
            pieces.append(("::", i, i + 2))
            i += 2
            continue
        if c == " ":
            close_word(i)
            pieces.append((" ", i, i + 1))
            i += 1
            continue
        if word_start < 0:
            word_start = i
        i += 1
    close_word(n)
    return pieces


def _group_end(text: str, start: int) -> int:
    """The end (exclusive) of the bracketed group opening at ``start``; operator names inside do not
    count, and an unbalanced group runs to the end of the text."""
    stack = [_OPEN[text[start]]]
    i, n = start + 1, len(text)
    while i < n and stack:
        c = text[i]
        if (
            text.startswith("operator", i)
            and text[i - 1] not in _WORD
            and (i + 8 >= n or text[i + 8] not in _WORD)
        ):
            i = _operator_end(text, i)
            continue
        if c in _OPEN:
            stack.append(_OPEN[c])
        elif c == stack[-1]:
            stack.pop()
        i += 1
    return i


def _component(text: str, pieces: list[tuple[str, int, int]]) -> str:
    """One ``::``-separated part of a qualified name in its short form: template arguments as
    ``<…>`` (kept when they are one plain word, ``Kernel2<cutlass_80_simt_sgemm_64x64_nn_align1>``),
    a function's parameters (a local entity's enclosing function) dropped, a lambda as ``{lambda#1}``."""
    out = []
    for kind, start, end in pieces:
        part = text[start:end]
        if kind == "<":
            inner = part[1:-1].strip()
            if not inner:
                out.append("<>")
            elif all(ch in _WORD for ch in inner) and len(inner) <= 64:
                out.append(f"<{inner}>")
            else:
                out.append(f"<{ELLIPSIS}>")
        elif kind == "(":
            if part == "(anonymous namespace)":
                out.append(part)
            # else: the parameter list of an enclosing function: dropped
        elif kind == "{":
            inner = part[1:-1]
            label, _, number = inner.rpartition("#")
            head = label.split("(", 1)[0] if label else inner
            out.append("{" + head + (f"#{number}" if label and number.isdigit() else "") + "}")
        else:
            out.append(part)
    return "".join(out).strip()


def _is_word_name(component: str) -> bool:
    """A component that names something by itself (not an operator, a lambda or an unnamed scope)."""
    return bool(component) and not component.startswith(("operator", "{", "(anonymous", "'"))


def short_name(demangled: str) -> str:
    """A demangled C++ name as a person recognises it: ``void at::native::f<4, X<float> >(int, X<float>)``
    -> ``f<…>``. Return type, parameter list, qualifiers (``const``, ``[clone .cold]``) and
    namespaces go; a name that alone says little (``operator()``, a lambda) keeps the part before it
    (``Functor::operator()``, ``foo::{lambda#1}``). Text it cannot parse comes back as it is."""
    text = demangled.strip()
    while text.endswith("]") and " [clone " in text:  # GCC's clones: f() [clone .cold]
        text = text[: text.rindex(" [clone ")].rstrip()
    pieces = _top_level(text)
    # The parameter list: the last top-level (...) group not followed by '::' (a local entity's
    # enclosing function is followed by '::'), after a name; what follows it are qualifiers.
    for k in range(len(pieces) - 1, 0, -1):
        scoped = k + 1 < len(pieces) and pieces[k + 1][0] == "::"
        if pieces[k][0] == "(" and pieces[k - 1][0] in ("word", "<") and not scoped:
            pieces = pieces[:k]
            break
    # The return type: everything up to the last top-level space.
    for k in range(len(pieces) - 1, -1, -1):
        if pieces[k][0] == " ":
            pieces = pieces[k + 1 :]
            break
    components: list[list[tuple[str, int, int]]] = [[]]
    for piece in pieces:
        if piece[0] == "::":
            components.append([])
        else:
            components[-1].append(piece)
    parts = [_component(text, c) for c in components]
    parts = [p for p in parts if p]
    if not parts:
        return demangled
    shown = [parts[-1]]
    for part in reversed(parts[:-1]):
        if _is_word_name(shown[0]):
            break
        shown.insert(0, part)
    return "::".join(shown)


@lru_cache(maxsize=65536)
def display_name(name: str, full: bool = False) -> str:
    """What a view shows for a frame name: a mangled C++ name's short form (``full``: its whole
    demangled text); any other name, or one that will not demangle, as it is."""
    text = demangle(name)
    if text is None:
        return name
    return text if full else short_name(text)


def matches(search: Any, name: str) -> bool:
    """Whether a compiled pattern's ``search``/``match`` finds the name as stored or as shown (short
    or full): ``-i``/``-e`` filters match either."""
    if search(name):
        return True
    text = demangle(name)
    return text is not None and bool(search(short_name(text)) or search(text))


# Proton's name for a place in source: ``file:line@function`` (a Python frame of ``-c python``, a
# sampled line of ``--sample``, whose function is the kernel's name).
_SOURCE_FRAME = re.compile(r"^(?P<file>.+):(?P<line>\d+)@(?P<function>[^@]+)$")


def source_frame(file: str, line: int, function: str) -> str:
    """The frame name of a place in source, as Proton writes it."""
    return f"{file}:{line}@{function}"


def parse_source_frame(name: str) -> tuple[str, int, str] | None:
    """(file, line, function) of a :func:`source_frame` name; None for any other frame."""
    m = _SOURCE_FRAME.match(name)
    return (m["file"], int(m["line"]), m["function"]) if m else None
