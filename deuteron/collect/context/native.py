"""The native context (``-c native``): the C/C++ frames a kernel was launched from, below the
launch's scope or Python path, for libraries that launch from C++ without Python (libtorch's
ops, XLA, a C++ extension), as DeepContext's C/C++ context does.

The CUPTI shim unwinds at each launch (glibc's ``backtrace``, which reads the libraries' unwind
tables) and keeps each distinct path of return addresses once, by id, in the launch's op column
flagged with ``NATIVE_PLACE``. Here the addresses are symbolized once each with ``dladdr`` (the
library and its exported symbol, demangled with libstdc++'s ``__cxa_demangle``, parameters
dropped); a run of frames in symbols a library does not export reads ``library (internal)``, once.
The frames of the launch machinery itself (CUPTI, the CUDA driver and runtime, the Python
interpreter, libc, this shim) are left out: with ``-c python,native`` the Python line is above.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from collections.abc import Callable

from deuteron.collect.context import LaunchPlace
from deuteron.collect.placement import LaunchContexts
from deuteron.model.names import demangle
from deuteron.model.tree import Node

NATIVE_PLACE = 1 << 31  # the shim's flag on a launch's op column (torch's trie ids stay below it)
MAX_NAME = 160  # characters of a demangled name kept (template arguments can run to thousands)

# Libraries whose frames are the launch machinery or the interpreter, not the program's code.
_MACHINERY = ("libcupti", "libcuda.", "libcudart", "libpython", "libc.so", "libc-", "ld-linux",
              "libffi", "_ctypes", "libgcc_s", "_shim")  # fmt: skip


class _DlInfo(ctypes.Structure):
    """glibc's ``Dl_info``, which ``dladdr`` fills: the library a return address falls in and the
    nearest exported symbol. Fields in ``<dlfcn.h>``'s order and types; ctypes cannot read the header.
    """

    _fields_ = [
        ("dli_fname", ctypes.c_char_p),
        ("dli_fbase", ctypes.c_void_p),
        ("dli_sname", ctypes.c_char_p),
        ("dli_saddr", ctypes.c_void_p),
    ]


class Symbolizer:
    """Return addresses into frame names, each address once."""

    def __init__(self) -> None:
        self._names: dict[int, str | None] = {}
        libc = ctypes.CDLL(None)
        dladdr = getattr(libc, "dladdr", None)
        if dladdr is None:  # glibc before 2.34 keeps it in libdl
            dladdr = ctypes.CDLL(ctypes.util.find_library("dl") or "libdl.so.2").dladdr
        dladdr.argtypes, dladdr.restype = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)], ctypes.c_int
        self._dladdr = dladdr
        self._python = {os.path.realpath(sys.executable)}

    def name(self, address: int) -> str | None:
        """The frame name of a return address; None for a frame of the launch machinery."""
        if address in self._names:
            return self._names[address]
        info = _DlInfo()
        # a return address may point just past its call (the last instruction of a function)
        if not self._dladdr(ctypes.c_void_p(max(address - 1, 0)), ctypes.byref(info)) or not info.dli_fname:
            name: str | None = f"0x{address:x}"
        else:
            path = info.dli_fname.decode("utf-8", "replace")
            library = os.path.basename(path)
            if (
                any(m in library for m in _MACHINERY)
                or library.startswith("python")
                or os.path.realpath(path) in self._python
            ):
                name = None
            elif info.dli_sname:
                name = f"{self.demangle(info.dli_sname.decode('utf-8', 'replace'))} ({library})"
            else:  # not exported: one frame for a run of them (the path drops repeats)
                name = f"{library} (internal)"
        self._names[address] = name
        return name

    def demangle(self, symbol: str) -> str:
        """A C++ symbol as its qualified name without the parameter list (shortened); a C one as is."""
        text = demangle(symbol)
        return symbol if text is None else shorten_symbol(text)


def shorten_symbol(text: str) -> str:
    """``ns::f<T>(int, float) const`` -> ``ns::f<T>``, at most MAX_NAME characters."""
    depth = 0
    for i in range(len(text) - 1, -1, -1):  # the parameter list: the last balanced (...) group
        c = text[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                if i > 0 and not text.startswith("(anonymous", max(i, 0)):
                    text = text[:i]
                break
    if text.startswith("void "):
        text = text[5:]
    return text if len(text) <= MAX_NAME else text[: MAX_NAME - 1] + "…"


class NativeContext:
    """The native context source of one session: native path ids into nodes below the launch's
    own context. ``reader(first_id)`` gives the shim's paths from ``first_id`` on (innermost
    address first); a recorded table (a fixture) gives the frames directly."""

    name = "native"

    def __init__(self, contexts: LaunchContexts) -> None:
        self.contexts = contexts
        self.reader: Callable[[int], list[tuple[int, ...]]] | None = None
        self.frames: list[tuple[str, ...]] = []  # path id - 1 -> frame names, outermost first
        self._symbols: Symbolizer | None = None

    def _sync(self) -> None:
        if self.reader is None:
            return
        symbols = self._symbols = self._symbols or Symbolizer()
        for path in self.reader(len(self.frames) + 1):
            frames: list[str] = []
            for address in reversed(path):
                name = symbols.name(address)
                if name is not None and (not frames or frames[-1] != name):
                    frames.append(name)
            self.frames.append(tuple(frames))

    def owns(self, place_id: int) -> bool:
        return NATIVE_PLACE <= place_id < NATIVE_PLACE << 1

    def launch_place(self, place_id: int, context_id: int) -> LaunchPlace:
        """The launch's C/C++ frames below its own context (on its own thread)."""
        return LaunchPlace(self.place(place_id, self.contexts.node(context_id)))

    def place(self, place_id: int, base: Node) -> Node:
        """The node of native place ``place_id`` (flagged: its path id with ``NATIVE_PLACE``)
        below ``base``."""
        path_id = place_id & (NATIVE_PLACE - 1)
        if path_id > len(self.frames):
            self._sync()
        node = base
        if 0 < path_id <= len(self.frames):
            for name in self.frames[path_id - 1]:
                node = node.child(name)
        return node

    def table(self) -> list[list[str]]:
        """Each path's frames (saved beside recorded CUPTI drains)."""
        self._sync()
        return [list(f) for f in self.frames]

    def replay(self, table: list[list[str]]) -> None:
        self.frames = [tuple(f) for f in table]
        self.reader = None
