"""The explainer as a library: run a program, capture each kernel specialization it launches,
compile each for the targets, analyse and lint it, and join a recorded profile."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from deuteron.explain.analysis import analyse
from deuteron.explain.capture import Capture, Specialization
from deuteron.explain.cross_compile import compile_spec
from deuteron.explain.errors import ExplainError
from deuteron.explain.inductor import InductorKernels
from deuteron.explain.lints import lint
from deuteron.explain.report import ExplainReport
from deuteron.explain.roofline import kernel_costs, profile_device
from deuteron.explain.targets import Target, default_target, parse_target
from deuteron.formats import hatchet
from deuteron.model.devices import DeviceSpec, named_device
from deuteron.model.tree import Profile
from deuteron.process.program import Program, run_to_end
from deuteron.view.hot_lines import LineAdvice, hot_lines, sampled_kernels

# Named devices to judge a profile against when it carries no device table, by target.
DEVICE_FOR = {"cuda:80": "a100", "cuda:89": "l40s", "cuda:90": "h100", "cuda:100": "b200"}

Progress = Callable[[int, int, Specialization], None]


@dataclass
class ExplainRun:
    """An explained run: the report, the program's own exit code, why it ended early ("" if not),
    and notes on launches that could not be captured."""

    report: ExplainReport
    exit_code: int
    ended_by: str
    notes: list[str] = field(default_factory=list)

    def _repr_html_(self) -> str:
        """In a notebook: each kernel's source beside its stages, as the web UI shows them."""
        return self.report._repr_html_()


def run(
    program: Program | str,
    *args: str,
    targets: Sequence[str | Target] | None = None,
    kernel: str | None = None,
    profile: str | os.PathLike[str] | None = None,
    device: str | None = None,
    passes: bool = False,
    note: Callable[[str], None] | None = None,
    progress: Progress | None = None,
) -> ExplainRun:
    """Explain every kernel specialization ``program`` launches (a
    :class:`deuteron.process.program.Program`, or a script path followed by its arguments).

    ``targets``: GPU targets such as ``"cuda:90"`` (default: the local GPU, else cuda:90).
    ``kernel``: only kernels whose name contains it. ``profile``: a hatchet file whose kernel times
    rank the report (``device`` names the peaks when it has no device table). ``passes``: keep the
    MLIR pass log. ``note`` hears each launch that could not be captured, as soon as the program
    ends; ``progress(i, n, spec)`` each compile as it starts. Raises ExplainError when nothing can
    be explained (no kernel launched, a bad target); a kernel that does not compile is an entry of
    ``report.errors`` while the others are still explained.
    """
    if isinstance(program, str):
        program = Program.script(program, *args)
    chosen = [parse_target(t) if isinstance(t, str) else t for t in targets] if targets is not None else None
    if chosen is not None and not chosen:
        raise ExplainError("--target: give at least one target, e.g. cuda:90")
    if device and not profile:
        raise ExplainError("--device only applies with --profile")
    if profile and not os.path.isfile(profile):
        raise ExplainError(f"--profile {profile}: no such file")
    # Kernels must be compiled-mode JIT functions (the interpreter runs them launch by launch), and
    # without line info nothing maps back to source: both variables are unset while explaining.
    saved = {name: os.environ.pop(name, None) for name in ("TRITON_INTERPRET", "TRITON_DISABLE_LINE_INFO")}
    try:
        return _explain(program, chosen, kernel, profile, device, passes, note, progress)
    finally:
        os.environ.update({name: value for name, value in saved.items() if value is not None})


def _explain(
    program: Program,
    chosen: list[Target] | None,
    kernel: str | None,
    profile: str | os.PathLike[str] | None,
    device: str | None,
    passes: bool,
    note: Callable[[str], None] | None,
    progress: Progress | None,
) -> ExplainRun:
    capture = Capture(chosen or [default_target()])
    inductor = InductorKernels(capture.on_gpu)
    owner = os.getpid()
    with capture, inductor:
        code, ended_by = run_to_end(program)
        # torch.compile's kernels, launched by Inductor's launchers (never Triton's JIT) or only
        # defined (a file Inductor wrote for one kernel): keyed from Inductor's description
        capture.errors.extend(inductor.record_into(capture))
    if os.getpid() != owner:  # a child the program forked: the explaining is the parent's
        return ExplainRun(ExplainReport(), code, ended_by)
    for text in capture.errors:
        if note is not None:
            note(text)
    specs = [s for s in capture.specs.values() if not kernel or kernel in s.name]
    if not specs:
        what = f" named like {kernel!r}" if kernel else ""
        raise ExplainError(
            f"no Triton kernel{what} was launched by {program.name}"
            + (f" ({ended_by})" if ended_by else "")
            + "; explain needs the script to launch at least one @triton.jit kernel"
        )
    costs: dict[str, Any] = {}
    device_label = None
    lines: dict[str, list[LineAdvice]] = {}
    if profile:
        recorded = hatchet.read(profile)
        target_name = (capture.targets or [default_target()])[0].name
        costs, device_label = _profile_costs(recorded, device, target_name)
        lines = {kernel.name: advice for kernel, advice in hot_lines(recorded, top=len(specs) + 50)[0]}
    report = compile_all(specs, passes=passes, costs=costs, device=device_label, progress=progress)
    report.lines = lines
    if profile:
        report.sampled = sampled_kernels(recorded)
        sampling = recorded.metadata.get("pc_sampling")
        kernels = sampling.get("kernels") if isinstance(sampling, dict) else None
        if isinstance(kernels, dict):
            report.pcs = {k: v for k, v in kernels.items() if isinstance(v, dict)}
    return ExplainRun(report, code, ended_by, list(capture.errors))


def _profile_costs(
    recorded_profile: Profile, device_name: str | None, target_name: str
) -> tuple[dict[str, Any], str | None]:
    recorded = profile_device(recorded_profile)
    spec: DeviceSpec | None
    label: str | None
    if recorded is not None:
        spec, label = recorded, f"sm_{recorded.arch}, {recorded.num_sms} SMs (from the profile)"
    else:
        name = device_name or DEVICE_FOR.get(target_name)
        spec = named_device(name) if name else None
        label = name
    return kernel_costs(recorded_profile, spec), label


def compile_all(
    specs: list[Specialization],
    *,
    passes: bool = False,
    costs: dict[str, Any] | None = None,
    device: str | None = None,
    progress: Progress | None = None,
) -> ExplainReport:
    """Compile, analyse and lint each specialization; one that fails is an error entry, not a stop."""
    report = ExplainReport(costs=costs or {}, device=device)
    for i, spec in enumerate(specs, start=1):
        if progress is not None:
            progress(i, len(specs), spec)
        try:
            analysis = analyse(compile_spec(spec, passes=passes))
            analysis.findings = lint(analysis)
            for finding in analysis.findings:
                finding.file, finding.kernel = spec.file, spec.name
            report.kernels.append(analysis)
        except ExplainError as exc:  # this kernel only; the others are still explained
            report.errors.append(str(exc))
        except Exception as exc:  # a tool or format we did not expect: say which kernel, go on
            report.errors.append(
                f"{spec.name} on {spec.target.name}: analysis failed ({type(exc).__name__}: {exc}); "
                "please report this with the kernel"
            )
    return report
