"""Proton's profiling modes as objects (``deuteron.mode.PCSampling(interval=500)``), so code that
builds them runs unchanged. Deuteron does not have these modes yet: ``start(mode=...)`` refuses
every one of them with one line, rather than profiling without what was asked for."""

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
    """Proton's PC sampling mode; ``interval`` is checked when the mode is made, so a bad one fails
    where it is written, not later at ``start`` (which refuses the mode anyway)."""

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
                raise ValueError(f"Unknown {name}: {getattr(self, name)}")
        if isinstance(self.optimizations, str):
            words = [w.strip() for w in self.optimizations.split(",") if w.strip()]
            try:
                object.__setattr__(self, "optimizations", [Optimize(w) for w in words])
            except ValueError as exc:
                raise ValueError(f"Unknown optimization: {exc}") from None

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
