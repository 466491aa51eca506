"""How much of each kernel's PC samples sits on its ``# HOT`` line: the check of issue 39's target
on a profile of ``benchmarks/hot_line_kernel.py`` (``deuteron run --sample``, on a GPU) or of its
replayed fixture (``tests/fixtures/cupti_hot_line``).

Why this exists: the kernels there keep their time on one marked line each, so every sample not
on that line is a sample the line mapping lost: to ``<no source line>`` (the *unplaced* share),
to a wrong line, or to Triton's own files. For each kernel it prints the samples, the ``# HOT``
line's share (its frame and the inlined callees below it), the unplaced share, the other lines
and the callees under the hot line, and the file's ``placement`` counts (how the samples found
their lines: on their own line, through an inlined call, from their basic block, or not at all).

Usage: ``python benchmarks/hot_line_check.py deuteron.hatchet [--source benchmarks/hot_line_kernel.py]``.
Exit status 0 when every kernel meets the target (``# HOT`` line at least 90%, unplaced under
2%), 1 when one misses it, 2 when the profile has no samples for a marked kernel.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from deuteron.explain.pc_lines import NO_LINE
from deuteron.formats import hatchet
from deuteron.model.names import parse_source_frame
from deuteron.model.tree import KERNEL, Node

HOT_SHARE = 0.90  # the target: the # HOT line's share of its kernel's samples, at least
UNPLACED_SHARE = 0.02  # and the share on <no source line>, under
SAMPLES = "num_samples"
SOURCE = Path(__file__).with_name("hot_line_kernel.py")
_DEF_RE = re.compile(r"^def (\w+)\(")


def hot_lines(source: Path) -> dict[str, int]:
    """Each kernel of ``source`` with its ``# HOT`` line (1-based)."""
    out: dict[str, int] = {}
    kernel = ""
    for number, text in enumerate(source.read_text(encoding="utf-8").splitlines(), start=1):
        m = _DEF_RE.match(text)
        if m:
            kernel = m.group(1)
        elif text.rstrip().endswith("# HOT") and kernel:
            out[kernel] = number
    return out


def _samples(node: Node) -> int:
    return sum(int(n.metrics.get(SAMPLES, 0) or 0) for n in node.walk())  # type: ignore[call-overload]


def kernel_shares(nodes: list[Node], source: str, hot: int) -> dict[str, object]:
    """One kernel's samples over the places it ran: in all, on the hot line (with its callees),
    unplaced, per other line, and per callee under the hot line."""
    total = hot_samples = unplaced = 0
    lines: dict[str, int] = {}
    callees: dict[str, int] = {}
    for kernel in nodes:
        total += _samples(kernel)
        for child in kernel.children.values():
            n = _samples(child)
            place = parse_source_frame(child.name)
            on_hot = place is not None and place[1] == hot and os.path.basename(place[0]) == source
            if on_hot:
                hot_samples += n
                for callee in child.children.values():
                    callees[callee.name] = callees.get(callee.name, 0) + _samples(callee)
            elif child.name == NO_LINE:
                unplaced += n
            if not on_hot:
                lines[child.name] = lines.get(child.name, 0) + n
    return {"total": total, "hot": hot_samples, "unplaced": unplaced, "lines": lines, "callees": callees}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("profile", help="a profile of hot_line_kernel.py written by deuteron run --sample")
    parser.add_argument("--source", type=Path, default=SOURCE, help="the script with the # HOT lines")
    args = parser.parse_args(argv)
    profile = hatchet.read(args.profile)
    meta = profile.metadata.get("pc_sampling")
    kernels_meta = meta.get("kernels", {}) if isinstance(meta, dict) else {}
    status = 0
    for name, hot in hot_lines(args.source).items():
        nodes = [n for n in profile.root.walk() if n.type == KERNEL and n.name == name]
        found = kernel_shares(nodes, args.source.name, hot)
        total = int(found["total"])  # type: ignore[call-overload]
        if not total:
            print(f"{name}: no PC samples in {args.profile} (run it under deuteron run --sample on a GPU)")
            status = 2
            continue
        hot_share = int(found["hot"]) / total  # type: ignore[call-overload]
        unplaced_share = int(found["unplaced"]) / total  # type: ignore[call-overload]
        ok = hot_share >= HOT_SHARE and unplaced_share < UNPLACED_SHARE
        status = status or (0 if ok else 1)
        print(
            f"{name}: {total:,} samples; line {hot} (# HOT) {hot_share:.1%} (target >= {HOT_SHARE:.0%}), "
            f"unplaced {unplaced_share:.2%} (target < {UNPLACED_SHARE:.0%}): {'ok' if ok else 'MISSED'}"
        )
        callees = found["callees"]
        assert isinstance(callees, dict) and isinstance(found["lines"], dict)
        for callee, n in sorted(callees.items(), key=lambda kv: -kv[1])[:4]:
            print(f"    under line {hot}: {callee}  {n / total:.1%}")
        for line, n in sorted(found["lines"].items(), key=lambda kv: -kv[1])[:4]:
            print(f"    elsewhere: {line.rsplit('/', 1)[-1]}  {n / total:.1%}")
        entry = kernels_meta.get(name, {}) if isinstance(kernels_meta, dict) else {}
        if isinstance(entry, dict) and "placement" in entry:
            print(f"    placement (samples): {entry['placement']}")
    return status


if __name__ == "__main__":
    sys.exit(main())
