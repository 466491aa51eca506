"""`deuteron view` against Triton's proton-viewer, option by option, on the same files.

For each file and each combination of metrics (-m), filters (-i, -e), threshold (-t), depth (-d)
and name format (-f), both viewers run in this process (proton-viewer through its ``main``, with
llnl-hatchet installed) and their printed trees are compared row by row: the same frames, and the
same numbers to the printed precision. Each difference is put in a class, so a change to either
viewer shows up as a moved count, and the classes Deuteron keeps on purpose are named in
docs/viewing.md.

    python benchmarks/viewer_parity.py FILE.json ... [--show CLASS]

Pass Proton's own example files (triton-lang/triton third_party/proton/test/examples/*.json) and
any profiles of ours.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import json
import math
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

METRICS = [
    "time/ms",
    "time/%",
    "avg_time/us",
    "count",
    "bytes",
    "gbyte/s",
    "util",
    "time/ms,count",
    "time/%,count",
]
TREE = re.compile(r"^[\s│├└─]*")
NUMBER = re.compile(r"^-?(\d+(\.\d*)?([eE][-+]?\d+)?|nan|inf)$")

Row = tuple[str, tuple[float, ...]]


def _proton(args: list[str]) -> tuple[int, str]:
    from triton.profiler.viewer import main

    out = io.StringIO()
    saved = sys.argv
    sys.argv = ["proton-viewer", *args]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            main()
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    except Exception:  # proton-viewer's own failure on this combination
        code = 1
    finally:
        sys.argv = saved
    return code, out.getvalue()


def _deuteron(args: list[str]) -> tuple[int, str]:
    from deuteron.cli import main

    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = main(["view", "--no-summary", *args])
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, out.getvalue()


def _value(word: str) -> float:
    return math.nan if word in ("-", "nan") else float(word)


def proton_rows(text: str) -> list[Row]:
    """proton-viewer's tree: each line is tree drawing, the numbers, then the frame's name."""
    rows = []
    for line in text.splitlines():
        words = TREE.sub("", line).split()
        numbers = list(itertools.takewhile(lambda w: NUMBER.match(w) is not None, words))
        if numbers and len(numbers) < len(words):
            rows.append((" ".join(words[len(numbers) :]), tuple(_value(w) for w in numbers)))
    return rows


def deuteron_rows(text: str) -> list[Row]:
    """Deuteron's tree: a header, then per line the numbers, the tree drawing and the name."""
    rows = []
    for line in text.splitlines()[1:]:
        words = line.split()
        numbers = list(itertools.takewhile(lambda w: w == "-" or NUMBER.match(w) is not None, words))
        if not numbers:
            continue
        name = line.split("─ ", 1)[1] if "─ " in line else " ".join(words[len(numbers) :])
        rows.append((name.strip(), tuple(_value(w) for w in numbers)))
    return rows


def _same(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= max(1.5e-3, 1e-3 * max(abs(a), abs(b)))


def classify(options: dict[str, Any], theirs: list[Row], ours: list[Row]) -> str:
    """'same', or the class of the first difference."""
    if sorted(n for n, _ in theirs) != sorted(n for n, _ in ours):
        mangled = {n for n, _ in theirs} - {n for n, _ in ours}
        if len(theirs) == len(ours) and all(n.startswith("_Z") for n in mangled):
            return "names: deuteron shows C++ kernels demangled (the file keeps them mangled)"
        return "frames differ"
    mine = dict(ours)
    differing = [name for name, values in theirs if not all(map(_same, values, mine[name]))]
    if not differing:
        return "same"
    filtered = bool(options.get("-i") or options.get("-e") or options.get("-t"))
    derived = any(m not in ("count", "bytes") for m in options["-m"].split(","))
    if filtered and derived and set(differing) <= {"ROOT"}:
        return "filtered: ROOT's derived value (proton-viewer: the whole run's)"
    if filtered and derived and options["-m"].startswith("time/%"):
        return "filtered: shares (proton-viewer: of the whole run, ROOT 100)"
    if filtered and derived:
        return "filtered: derived values of the whole run (proton-viewer)"
    return "values differ: " + options["-m"]


def combinations(path: Path) -> list[dict[str, Any]]:
    data = json.loads(path.read_text())
    names = [c["frame"]["name"] for c in data[0]["children"]]
    first, last = re.escape(names[0]), re.escape(names[-1])
    out = []
    for metric, filt, threshold, depth, fmt in itertools.product(
        METRICS,
        [{}, {"-i": f".*{first}.*"}, {"-e": f".*{last}.*"}],
        [None, "0.1"],
        ["100", "2"],
        ["full", "function_line"],
    ):
        options: dict[str, Any] = {"-m": metric, **filt, "-d": depth, "-f": fmt}
        if threshold:
            options["-t"] = threshold
        out.append(options)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--show", help="print each combination of this class (a prefix)")
    args = parser.parse_args()
    classes: Counter[str] = Counter()
    total = 0
    for path in args.files:
        for options in combinations(path):
            argv = [w for k, v in options.items() for w in (k, v)] + [str(path)]
            p_code, p_out = _proton(argv)
            d_code, d_out = _deuteron(argv)
            total += 1
            if p_code != 0 and d_code != 0:
                kind = "both refuse (a metric the file lacks)"
            elif p_code != 0:
                kind = "proton-viewer fails (a traceback), deuteron shows"
            elif d_code != 0:
                kind = "deuteron refuses, proton-viewer shows"
            else:
                kind = classify(options, proton_rows(p_out), deuteron_rows(d_out))
            classes[kind] += 1
            if args.show and kind.startswith(args.show):
                print(f"--- {path.name} {' '.join(argv[:-1])}: {kind}\n{p_out}\n{d_out}")
    print(f"{total} combinations over {len(args.files)} files")
    for kind, n in classes.most_common():
        print(f"{n:5d}  {kind}")


if __name__ == "__main__":
    main()
