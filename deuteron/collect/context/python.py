"""The Python context: the call path of the launching thread, frame by frame.

Frames are named like Proton's (``file:line@function``). Frames of Deuteron itself and of
Triton's launch machinery are left out, and so is everything above ``runpy`` (the launcher
that ``deuteron run`` and ``python -m`` go through), so the path starts at the user's
script and ends at the line that launched the kernel. Paths are
cached by the code objects and lines they pass through, so a hot loop costs a frame walk.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Sequence
from types import FrameType

from deuteron.model.names import source_frame
from deuteron.model.tree import Node

_DEUTERON_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _runpy_files() -> frozenset[str]:
    import runpy

    # Python may run runpy from its frozen copy, whose code objects carry this name.
    return frozenset({os.path.abspath(runpy.__file__), runpy.__file__, "<frozen runpy>"})


def _skipped_dirs() -> tuple[str, ...]:
    """Deuteron's package and Triton's, found without importing Triton (it may come later)."""
    dirs = [_DEUTERON_DIR + os.sep]
    spec = importlib.util.find_spec("triton")
    for location in (spec.submodule_search_locations or []) if spec else []:
        dirs.append(os.path.abspath(location) + os.sep)
    return tuple(dirs)


class PythonContext:
    """The launching thread's Python call path as nodes below the root (rules in the module's text).

    Paths are cached by their (code object, line) pairs, so a launch from a hot loop costs one frame
    walk and one dict look-up, not a node per frame. The cache is shared by threads without a lock:
    a race builds the same node twice, which :meth:`Node.child` makes harmless. :meth:`node_for`
    applies the same rules to paths the CUPTI shim captured in C.
    """

    name = "python"

    def __init__(self, root: Node, max_depth: int = 128) -> None:
        self.root = root
        self.max_depth = max_depth
        self._cache: dict[tuple[object, ...], Node] = {}
        self._skip: tuple[str, ...] = _skipped_dirs()
        self._skip_files: dict[str, bool] = {}
        self._launchers = _runpy_files()

    def _skipped(self, filename: str) -> bool:
        hit = self._skip_files.get(filename)
        if hit is None:
            path = os.path.abspath(filename)
            hit = filename.startswith("<frozen") or path.startswith(self._skip)
            self._skip_files[filename] = hit
        return hit

    def current(self, frame: FrameType | None = None) -> Node:
        f: FrameType | None = frame if frame is not None else sys._getframe(1)
        frames: list[FrameType] = []
        launchers = self._launchers
        while f is not None and len(frames) < self.max_depth:
            filename = f.f_code.co_filename
            if filename in launchers:
                break
            if not self._skipped(filename):
                frames.append(f)
            f = f.f_back
        key = tuple(x for fr in frames for x in (fr.f_code, fr.f_lineno))
        node = self._cache.get(key)
        if node is None:
            node = self.root
            for fr in reversed(frames):
                code = fr.f_code
                node = node.child(source_frame(code.co_filename, fr.f_lineno, code.co_name))
            self._cache[key] = node
        return node

    def locate(self, base: Node) -> Node:
        if base is self.root:
            return self.current(sys._getframe(1))
        return self.node_for(_frames(sys._getframe(1)), base)

    def node_for(self, frames: Sequence[tuple[str, int, str]], base: Node | None = None) -> Node:
        """The node of a call path captured elsewhere (the CUPTI shim), innermost frame first.

        Same rules as ``current``: stop at the launcher, leave out Deuteron's and Triton's frames.
        """
        names: list[str] = []
        for filename, line, function in frames:
            if filename in self._launchers or len(names) >= self.max_depth:
                break
            if not self._skipped(filename):
                names.append(source_frame(filename, line, function))
        node = self.root if base is None else base
        for name in reversed(names):
            node = node.child(name)
        return node


def _frames(frame: FrameType | None) -> list[tuple[str, int, str]]:
    out = []
    while frame is not None:
        out.append((frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name))
        frame = frame.f_back
    return out
