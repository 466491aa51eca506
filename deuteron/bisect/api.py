"""``deuteron bisect`` as a library: the first bad version between a good and a bad one (git
commits or Triton releases), judged by :mod:`.judge`, found by :mod:`.search`, and the IR stage
where the kernel's code changed between the last good and the first bad (:mod:`.stages`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from deuteron.bisect import search
from deuteron.bisect.commits import Commits
from deuteron.bisect.errors import BisectError
from deuteron.bisect.judge import SLOWER, Judge
from deuteron.bisect.releases import Releases, is_release
from deuteron.bisect.stages import StageChange, compile_both, first_change
from deuteron.bisect.versions import Source, Version


@dataclass
class BisectResult:
    """The last good and the first bad version, how many verdicts it took, and where the code
    changed (``change`` None with ``stage_note`` saying why, when it could not be told)."""

    last_good: Version
    first_bad: Version
    verdicts: int
    what: str
    change: StageChange | None = None
    stage_note: str = ""


def _source(
    script: str,
    good: str,
    bad: str,
    repo: str | None,
    triton_versions: list[str] | None,
    triton_folders: dict[str, str] | None,
    say: Callable[[str], None],
) -> Source:
    if is_release(good) or is_release(bad):
        if repo is not None:
            raise BisectError("--repo bisects commits: give --good and --bad as commits, or leave --repo out")
        return Releases(script, good, bad, triton_versions, triton_folders, say)
    if triton_versions or triton_folders:
        raise BisectError("--triton-versions and --triton-folder apply to --good triton==X --bad triton==Y")
    return Commits(repo, script, good, bad)


def run(
    script: str,
    args: list[str],
    *,
    good: str,
    bad: str,
    mode: str,
    repo: str | None = None,
    threshold: float = 1.1,
    rounds: int = 5,
    target: str | None = None,
    kernel: str | None = None,
    stages: bool = True,
    limit: float = 600.0,
    triton_versions: list[str] | None = None,
    triton_folders: dict[str, str] | None = None,
    say: Callable[[str], None] = print,
) -> BisectResult:
    """Bisect: ``mode`` is ``wrong``, ``check`` or ``slower`` (``threshold`` its ratio). ``say``
    hears each step's verdict as it is reached. Raises BisectError on bad input, and when the good
    version is bad already or the bad one is not bad."""
    if not os.path.isfile(script):
        raise BisectError(f"{script}: no such file")
    judge = Judge(mode, args, limit, threshold=threshold, rounds=rounds, max_rounds=3 * rounds, say=say)
    try:
        source = _source(script, good, bad, repo, triton_versions, triton_folders, say)
    except BaseException:
        judge.close()
        raise
    try:
        versions = source.versions
        first, last = versions[0], versions[-1]
        between = len(versions) - 2
        if between:
            say(
                f"bisecting {between} {source.what}{'s' if between != 1 else ''} between {first.shown()} "
                f"(good) and {last.shown()} (bad), about {search.steps_left(0, len(versions) - 1)} steps; "
                f"the script runs {judge.where()}"
            )
        else:
            say(
                f"{first.shown()} (good) and {last.shown()} (bad) are next to each other; "
                f"the script runs {judge.where()}"
            )
        good_verdict, bad_verdict = judge.endpoints(source.place(first), source.place(last))
        say(f"good? {first.shown()}: {'bad' if good_verdict.bad else 'good'} ({good_verdict.why})")
        if good_verdict.bad:
            raise BisectError(
                f"--good {good} is bad already ({first.ref}: {good_verdict.why}): give a good version"
            )
        say(f"bad?  {last.shown()}: {'bad' if bad_verdict.bad else 'good'} ({bad_verdict.why})")
        if not bad_verdict.bad:
            what = "not slower" if mode == SLOWER else "good"
            raise BisectError(f"--bad {bad} is {what} too ({last.ref}: {bad_verdict.why}): nothing to bisect")
        count = [2]

        def is_bad(i: int, step: int, steps: int) -> bool:
            v = judge.judge(source.place(versions[i]))
            count[0] += 1
            say(f"[{step}/{max(steps, step)}] {versions[i].shown()}: {'bad' if v.bad else 'good'} ({v.why})")
            return v.bad

        low, high = search.bisect(len(versions), is_bad)
        result = BisectResult(versions[low], versions[high], count[0], source.what)
        if stages:
            say(f"compiling the kernels at {versions[low].ref} and {versions[high].ref} to compare their IR")
            before, after = compile_both(
                source.place(versions[low]), source.place(versions[high]), args, target, kernel, limit
            )
            if isinstance(before, str) or isinstance(after, str):
                failed = before if isinstance(before, str) else after
                side = versions[low].ref if isinstance(before, str) else versions[high].ref
                result.stage_note = f"could not compile the kernels at {side}: {failed}"
            else:
                result.change = first_change(before, after)
                if result.change is None:
                    result.stage_note = (
                        "the kernels' IR is the same at both (ttir, ttgir, llir, ptx): "
                        "the change is outside the kernels' code"
                    )
        return result
    finally:
        source.close()
        judge.close()
