"""Proton's profiling modes as objects (``deuteron.mode.Default(granularity="warp")``), so code that
builds them runs unchanged. The instrumentation modes drive ``backend="instrumentation"``;
``PCSampling`` (or ``mode="pcsampling:interval=N"``) turns on CUPTI's PC sampling in the CUPTI
backend (``deuteron run --sample``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

METRIC_TYPES = ("cycle",)
BUFFER_STRATEGIES = ("circular", "flush")
BUFFER_TYPES = ("shared", "global")
SAMPLING_STRATEGIES = ("none", "selective")
GRANULARITIES = (
    "cta", "warp", "warp_2", "warp_4", "warp_8",
    "warp_group", "warp_group_2", "warp_group_4", "warp_group_8",
)  # fmt: skip


class Optimize(Enum):
    """Proton's instrumentation optimizations, by the words ``optimizations="time_shift,clock32"``
    takes; ``str()`` gives the word back, for the mode's own ``str()``."""

    TIMESHIFT = "time_shift"
    SCHED_STORES = "sched_stores"
    SCHED_BARRIERS = "sched_barriers"
    CLOCK32 = "clock32"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class BaseMode:
    """Proton's base of every mode: its name, which starts the mode's ``str()``. Frozen, as in
    Proton: a mode is a value, checked once when made."""

    name: str


@dataclass(frozen=True)
class PCSampling(BaseMode):
    """Proton's PC sampling mode; ``interval`` (cycles between samples on each SM, rounded to the
    nearest power of two CUPTI takes, 32 to 2^31) is checked when the mode is made, so a bad one
    fails where it is written. Proton ignores it; Deuteron samples at it."""

    name: str = field(default="pcsampling", init=False)
    interval: int = 1000

    def __post_init__(self) -> None:
        if self.interval <= 0:
            raise ValueError("the sampling interval must be positive")

    def __str__(self) -> str:
        return f"{self.name}:interval={self.interval}"


@dataclass(frozen=True)
class InstrumentationMode(BaseMode):
    """Proton's settings for instrumented kernels, checked as Proton checks them."""

    metric_type: str = "cycle"
    sampling_strategy: str = "none"
    sampling_options: str = ""
    granularity: str = "warp"
    buffer_strategy: str = "circular"
    buffer_type: str = "shared"
    buffer_size: int = 0
    optimizations: list[Optimize] | str = field(default_factory=list)

    def __post_init__(self) -> None:
        for name, allowed in (
            ("metric_type", METRIC_TYPES),
            ("sampling_strategy", SAMPLING_STRATEGIES),
            ("granularity", GRANULARITIES),
            ("buffer_strategy", BUFFER_STRATEGIES),
            ("buffer_type", BUFFER_TYPES),
        ):
            if getattr(self, name) not in allowed:
                choices = ", ".join(allowed)
                raise ValueError(f"Unknown {name}: {getattr(self, name)} (choose one of: {choices})")
        if self.sampling_strategy == "selective":
            ids = [w.strip() for w in self.sampling_options.split(",") if w.strip()]
            if not ids or not all(w.isdigit() for w in ids):
                raise ValueError(
                    f"sampling_options must list the warps to keep, as 0,2; got {self.sampling_options!r}"
                )
        if self.buffer_size < 0:
            raise ValueError(f"buffer_size must not be negative, not {self.buffer_size}")
        if isinstance(self.optimizations, str):
            words = [w.strip() for w in self.optimizations.split(",") if w.strip()]
            known = [o.value for o in Optimize]
            for word in words:
                if word not in known:
                    raise ValueError(f"Unknown optimization: {word} (choose from: {', '.join(known)})")
            object.__setattr__(self, "optimizations", [Optimize(w) for w in words])

    def __str__(self) -> str:
        opts = ",".join(str(o) for o in self.optimizations)
        return (
            f"{self.name}:metric_type={self.metric_type}:sampling_strategy={self.sampling_strategy}"
            f":sampling_options={self.sampling_options}:granularity={self.granularity}"
            f":buffer_strategy={self.buffer_strategy}:buffer_type={self.buffer_type}"
            f":buffer_size={self.buffer_size}:optimizations={opts}"
        )


@dataclass(frozen=True)
class Default(InstrumentationMode):
    """Proton's ``default`` instrumentation mode: :class:`InstrumentationMode` with its name fixed."""

    name: str = field(default="default", init=False)


@dataclass(frozen=True)
class MMA(InstrumentationMode):
    """Proton's ``mma`` instrumentation mode: :class:`InstrumentationMode` with its name fixed."""

    name: str = field(default="mma", init=False)


_KEYS = {
    "metric_type", "sampling_strategy", "sampling_options", "granularity",
    "buffer_strategy", "buffer_type", "buffer_size", "optimizations",
}  # fmt: skip
MODE_NAMES = ("default", "mma")


def instrumentation_mode(mode: object) -> InstrumentationMode:
    """Proton's instrumentation mode from what ``start(mode=...)`` took: a mode object, None or ""
    (``default``), or a string ``"default:granularity=warp:buffer_size=4096"``. A wrong name, key or
    value is a ValueError of one line naming the choices."""
    if isinstance(mode, InstrumentationMode):
        return mode
    if mode is None or mode == "":
        return Default()
    if not isinstance(mode, str):
        kind = type(mode).__name__
        raise ValueError(f"an instrumentation mode is a string or a deuteron.mode object, not {kind}")
    name, *parts = mode.split(":")
    options: dict[str, object] = {}
    for part in parts:
        key, sep, value = part.partition("=")
        if not sep:
            raise ValueError(f"malformed instrumentation option {part!r}; write it as key=value")
        if key not in _KEYS:
            choices = ", ".join(sorted(_KEYS))
            raise ValueError(f"unknown instrumentation option {key!r}; choose from: {choices}")
        options[key] = value
    if "buffer_size" in options:
        text = str(options["buffer_size"])
        if not text.isdigit():
            raise ValueError(f"buffer_size must be a whole number of bytes, not {text!r}")
        options["buffer_size"] = int(text)
    if name == "default":
        return Default(**options)  # type: ignore[arg-type]
    if name == "mma":
        return MMA(**options)  # type: ignore[arg-type]
    raise ValueError(f"unknown instrumentation mode {name!r}; choose one of: {', '.join(MODE_NAMES)}")


PCSAMPLING = "pcsampling"


def sampling_interval(mode: object) -> int | None:
    """The sampling interval in cycles when ``mode`` asks for PC sampling (a :class:`PCSampling`,
    ``"pcsampling"`` or ``"pcsampling:interval=N"``), else None. A bad option is a ValueError of
    one line."""
    if isinstance(mode, PCSampling):
        return mode.interval
    if not isinstance(mode, str) or mode.split(":", 1)[0] != PCSAMPLING:
        return None
    interval = PCSampling().interval
    for part in mode.split(":")[1:]:
        key, sep, value = part.partition("=")
        if not sep or key.strip() != "interval":
            raise ValueError(f"unknown {PCSAMPLING} option {part!r}; it takes interval=N (cycles)")
        try:
            interval = int(value)
        except ValueError:
            raise ValueError(
                f"the sampling interval must be a whole number of cycles, not {value!r}"
            ) from None
    return PCSampling(interval=interval).interval
