"""A scope's metrics as Proton sees them: the type each keeps, and what its trace event shows.

Proton stores each metric in a typed slot (``double``, ``int64_t``, a vector, a string) and
refuses a value of another type for the same name: adding ``1`` to a metric that was ``1.0``
raises ``Metric value type mismatch for valueId 0 (a): current=double, new=int64_t``. (Its Python
binding takes every Python int as ``int64_t``, negative or not, in Triton 3.9 and on main today;
for a while main said ``uint64_t`` for a non-negative one.)
A program's own sessions repeat that refusal with Proton's words, so code that relies on it (or
on its absence) behaves the same. The session ``deuteron run`` opens around a program is another
matter: it merges every session the program keeps apart, and one metric name may well carry a
float in one of them and a string in another. Refusing there would raise inside a program that
did nothing Proton refuses, so that session records without the check (``enforced=False``).

Proton's trace shows each scope with the metrics it was given (on entry and on exit, added up);
:func:`merged` adds them the way a node does. :func:`open_in` opens one scope in several
sessions at once, all or none.
"""

from __future__ import annotations

from typing import Any, Protocol

from deuteron.collect.deferred import DeferredValue, TensorMetric
from deuteron.model.metrics import CPU_TIME, INC, PTY, split_kind
from deuteron.model.tree import Node, plain_value

# what Proton's cpu_timed_scope adds to its scope, as Proton's trace names it
PROTON_CPU_TIME = f"{CPU_TIME}(exc)"
_PLAIN = (int, float, str)  # value types that are plain already (not NumPy's, not bool)


def value_type(name: str, value: Any) -> str:
    """A metric value's type in Proton's words, judged on the value as it is stored (NumPy and
    torch scalars as the number they hold, arrays as vectors)."""
    value = plain_value(name, value)  # a value add_metrics would refuse is refused here, by name
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "vector<double>" if any(isinstance(v, float) for v in value) else "vector<int64_t>"
    if isinstance(value, int):
        return "int64_t"  # Proton's binding: every Python int, negative or not
    return "double"


class ValueTypes:
    """The value type each user metric of one session first had (properties aside: a property may
    be a string in one scope and a number in another, as in Proton).

    ``check`` raises ``mismatch`` (an exception class the session passes in, its own error type)
    with Proton's message; the valueId is the metric's place in the order the session first saw
    names, as Proton numbers them. Unenforced, nothing is recorded or refused."""

    def __init__(self, mismatch: type[Exception], enforced: bool = True) -> None:
        self.mismatch = mismatch
        self.enforced = enforced
        self._seen: dict[str, str] = {}

    def check(self, metrics: dict[str, Any]) -> None:
        if not self.enforced:
            return
        for raw, value in metrics.items():
            name, metric_kind = split_kind(raw)
            if metric_kind == "pty":
                continue
            kind = value_type(name, value)
            seen = self._seen.setdefault(name, kind)
            if seen != kind:
                index = list(self._seen).index(name)
                raise self.mismatch(
                    f"Metric value type mismatch for valueId {index} ({name}): current={seen}, new={kind}"
                )


def as_given(known: dict[str, Any], later: dict[str, DeferredValue]) -> dict[str, Any]:
    """What a scope was given, as its trace event shows it: the values known now as plain ones,
    and the device values still to be read (not those replayed from a graph, whose every read
    is a new one)."""
    shown: dict[str, Any] = {
        key: value if type(value) in _PLAIN else plain_value(key, value) for key, value in known.items()
    }
    shown.update((key, value) for key, value in later.items() if isinstance(value, TensorMetric))
    return shown


def merged(given: dict[str, Any] | None, more: dict[str, Any]) -> dict[str, Any]:
    """The metrics one scope was given so far, plus ``more`` (its exit's): numbers add up, vectors
    element by element, properties and strings overwrite, as on a node; a device value not yet
    read stands as the latest."""
    into = Node("")
    into.metrics = dict(given or {})
    for key, value in more.items():
        if isinstance(value, DeferredValue) or isinstance(into.metrics.get(key), DeferredValue):
            into.metrics[key] = value
        else:
            into.add(key, value, PTY if split_kind(key)[1] == PTY else INC)
    return into.metrics


class Opens(Protocol):
    """What :func:`open_in` needs of a session (a protocol: the session module imports this one)."""

    value_types: ValueTypes

    def open_scope(self, name: str, metrics: dict[str, Any] | None) -> None: ...

    def abandon_scope(self, name: str) -> None: ...


def open_in(sessions: tuple[Opens, ...], name: str, metrics: dict[str, Any] | None) -> None:
    """Open a scope in every session or in none: when one refuses a metric, the sessions before it
    close it again, and the error goes on (the program's ``with`` never ran, so nothing would
    close it; left open, every later scope and kernel of theirs would sit inside it). Sessions
    that may refuse go first, so `deuteron run`'s own (which refuses nothing) has taken neither
    the scope nor its values when the program's refuses; of two of the program's sessions, the
    first keeps the values it took."""
    if metrics and len(sessions) > 1:
        sessions = tuple(sorted(sessions, key=lambda s: not s.value_types.enforced))
    for i, session in enumerate(sessions):
        try:
            session.open_scope(name, metrics)
        except BaseException:
            for opened in sessions[:i]:
                opened.abandon_scope(name)
            raise
