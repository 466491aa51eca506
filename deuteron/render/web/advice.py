"""The profile view's advice panel (``Finding`` in ``frontend/src/types.ts``): what ``deuteron view
--advise`` prints for the profile, computed by the same function (:func:`deuteron.view.findings.
findings`) and written with the same lines, each row of evidence tied to what it names in the page's
tree (a frame, a sampled source line, a kernel) so a click selects it. A row that names a rank,
the whole process or a collective's size, or a frame the page's tree left out (``--threshold``),
has no node. The page asks for them after its first paint (:class:`LazyAdvice`): on a
100 000-node tree they take seconds."""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from typing import Any

from deuteron.model.names import parse_source_frame
from deuteron.model.tree import Profile
from deuteron.view.advise import Advice, evidence_line, headline
from deuteron.view.findings import findings
from deuteron.view.processors import folded_name

_LINE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+)$")  # a hot line's row: ``file.py:123``
_RANK = re.compile(r"^rank \S+$")


class PageTree:
    """The page's tree (``ProfileData``'s preorder arrays) by recorded name, to find what a row of
    evidence names."""

    def __init__(self, page: dict[str, Any]) -> None:
        raw = page.get("raw_names") or page["names"]
        self.name = [raw[k] for k in page["name_id"]]
        first = page["values"][0] if page["values"] else []
        self.weight = [v if isinstance(v, (int, float)) else float("-inf") for v in first]
        self.children: list[list[int]] = [[] for _ in self.name]
        for i, up in enumerate(page["parent"]):
            if up >= 0:
                self.children[up].append(i)

    def _heaviest(self, ids: list[int]) -> list[int]:
        return sorted(ids, key=lambda i: (-self.weight[i] if i < len(self.weight) else 0, i))

    def frame(self, path: str) -> int | None:
        """The node at a path of names below ROOT (``a > b > c``); a folded part (``layers.*
        (Block)``) stands for each repeat, the heaviest that leads to the rest taken."""
        parts = path.split(" > ")

        def walk(node: int, k: int) -> int | None:
            if k == len(parts):
                return node
            want = parts[k]
            kids = [
                c for c in self.children[node] if self.name[c] == want or folded_name(self.name[c]) == want
            ]
            for child in self._heaviest(kids):
                found = walk(child, k + 1)
                if found is not None:
                    return found
            return None

        return walk(0, 0) if path else None

    def named(self, test: Callable[[str], bool]) -> int | None:
        """The heaviest node whose recorded name passes ``test``."""
        ids = [i for i in range(1, len(self.name)) if test(self.name[i])]
        return self._heaviest(ids)[0] if ids else None


def _line_test(file: str, line: int) -> Callable[[str], bool]:
    def test(name: str) -> bool:
        where = parse_source_frame(name)
        return where is not None and where[1] == line and os.path.basename(where[0]) == file

    return test


def target(a: Advice, path: str, tree: PageTree) -> tuple[str | None, int | None]:
    """What a row names ("frame", "line", "kernel", "rank", None) and its node in the page (None:
    none, or left out of the page's tree)."""
    if _RANK.match(path):
        return "rank", None
    hot = _LINE.match(path) if a.kind == "lines" else None
    if hot:
        return "line", tree.named(_line_test(hot["file"], int(hot["line"])))
    if a.kind == "stalls":
        return "kernel", tree.named(lambda name: name == path)
    node = tree.frame(path)
    if node is None and " > " not in path:
        node = tree.named(lambda name: name == path)
    return ("frame" if node is not None else None), node


def finding_json(a: Advice, tree: PageTree) -> dict[str, Any]:
    """One finding: its kind, message (title) and headline as printed, and its rows: the path as
    recorded, the line as printed, the numbers, what it names and where in the page."""
    rows = []
    for item in a.evidence:
        path = str(item.get("path", ""))
        names, node = target(a, path, tree)
        rows.append(
            {
                "path": path,
                "line": evidence_line(item).strip(),
                "numbers": {k: v for k, v in item.items() if k != "path"},
                "names": names,
                "node": node,
            }
        )
    return {"kind": a.kind, "title": a.title, "headline": headline(a), "evidence": rows}


def advice_data(profile: Profile, source: str, page: dict[str, Any]) -> list[dict[str, Any]]:
    """The findings of ``deuteron view SOURCE --advise`` on the page's tree (those with evidence,
    as the terminal prints them)."""
    found = [a for a in findings([profile], [source]) if a.evidence]
    if not found:
        return []
    tree = PageTree(page)
    return [finding_json(a, tree) for a in found]


class LazyAdvice:
    """The findings of each profile of a page (by its number), at ``/api/profile/N/advice.json``,
    computed on the first request (or by the server's warm-up) and kept."""

    URL = re.compile(r"^/api/profile/(\d{1,9})/advice\.json$")

    def __init__(self) -> None:
        self._kept: dict[int, list[dict[str, Any]] | tuple[Profile, str, dict[str, Any]]] = {}
        self._lock = threading.Lock()  # the server's threads and its warm-up

    def add(self, which: int, profile: Profile, source: str, page: dict[str, Any]) -> str:
        """Keep what profile ``which``'s findings need; returns their URL."""
        self._kept[which] = (profile, source, page)
        return f"/api/profile/{which}/advice.json"

    def get(self, which: int) -> list[dict[str, Any]]:
        with self._lock:
            kept = self._kept[which]
            if isinstance(kept, tuple):
                kept = self._kept[which] = advice_data(*kept)
            return kept

    def answer(self, path: str) -> list[dict[str, Any]] | None:
        """The findings a request path names; None for any other path (or profile)."""
        m = self.URL.match(path)
        which = int(m.group(1)) if m else -1
        return self.get(which) if which in self._kept else None

    def warm(self) -> None:
        for which in list(self._kept):
            self.get(which)

    def every(self) -> dict[str, list[dict[str, Any]]]:
        """Every answer by its path (a page without a server holds them)."""
        return {f"/api/profile/{which}/advice.json": self.get(which) for which in list(self._kept)}
