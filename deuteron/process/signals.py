"""SIGINT and SIGTERM while a file is being written: noted, not obeyed, until the file is on disk.

A profile of 300 000 nodes takes seconds to write; a Ctrl-C or a ``kill`` in that window must not
lose it (nor leave half of it). :class:`Deferred` replaces the two handlers for the length of a
``with`` block by ones that only note the signal; afterwards the old handlers come back and, when
``redeliver`` is set, the first noted signal is delivered to them, so the program still stops the
way it would have. Handlers can only be set from the main thread; elsewhere the block runs as is.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType, TracebackType
from typing import Any

WATCHED = (signal.SIGINT, signal.SIGTERM)


class Deferred:
    """A ``with`` block in which SIGINT and SIGTERM are noted, not obeyed (see the module's text).

    ``received`` keeps the signals in order and :attr:`exit_code` the code a shell would report;
    ``redeliver=False`` is for the commands, which return that code themselves rather than be killed
    by the old handler once the block ends; the API's writes redeliver, so a program still stops.
    """

    def __init__(self, redeliver: bool = True, note: str | None = None) -> None:
        self.redeliver = redeliver
        self.note = note  # said on stderr at the first signal, e.g. "finishing the profile first"
        self.received: list[int] = []
        self._previous: dict[int, Any] = {}

    def _handler(self, signum: int, _frame: FrameType | None) -> None:
        if not self.received and self.note:
            name = signal.Signals(signum).name
            print(f"deuteron: {name} received; {self.note}", file=sys.stderr, flush=True)
        self.received.append(signum)

    def __enter__(self) -> Deferred:
        if threading.current_thread() is threading.main_thread():
            for signum in WATCHED:
                try:
                    self._previous[signum] = signal.signal(signum, self._handler)
                except (ValueError, OSError):  # an embedded interpreter without signals
                    pass
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
        self._previous.clear()
        if self.redeliver and self.received and exc is None:
            os.kill(os.getpid(), self.received[0])

    @property
    def exit_code(self) -> int | None:
        """128 + the first noted signal, as a shell reports it; None when none came."""
        return 128 + self.received[0] if self.received else None
