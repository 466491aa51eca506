"""The public profiling API, shaped like Proton's so switching takes minutes: every name of it
but ``profile`` (see below), from the modules that do each job.

- :mod:`.lifecycle`: ``start``/``start_session``, ``activate``, ``deactivate``, ``finalize``, an
  open session and its profile by id (``find``, ``current_profile``), Proton's ``context.depth``;
- :mod:`.scopes`: ``scope``, ``cpu_timed_scope``, ``enter_scope``/``exit_scope``, the hot path;
- :mod:`.start_options`: what ``start()`` accepts (``check_mode``, the data formats);
- :mod:`.phases`: Proton's data phases;
- :mod:`.libproton`: Proton's low-level calls (``_select_backend``, Proton's ``profile`` module's
  name for what ``backend=None`` picks, is here as Proton has it).

``deuteron.profile`` (a block or a function, then shown) is :mod:`deuteron.view.profile_block`:
it renders, and the collector imports nothing of the views. Everything is a cheap no-op while no
session is active (and always, under ``DEUTERON_DISABLE=1``).
"""

from __future__ import annotations

from deuteron.collect.libproton import select_backend as _select_backend
from deuteron.collect.lifecycle import DEFAULT_PROFILE_NAME as DEFAULT_PROFILE_NAME
from deuteron.collect.lifecycle import activate as activate
from deuteron.collect.lifecycle import current_profile as current_profile
from deuteron.collect.lifecycle import deactivate as deactivate
from deuteron.collect.lifecycle import depth as depth
from deuteron.collect.lifecycle import finalize as finalize
from deuteron.collect.lifecycle import find as find
from deuteron.collect.lifecycle import start as start
from deuteron.collect.lifecycle import start_session as start_session
from deuteron.collect.registry import SessionError as SessionError
from deuteron.collect.scopes import cpu_timed_scope as cpu_timed_scope
from deuteron.collect.scopes import enter_scope as enter_scope
from deuteron.collect.scopes import exit_scope as exit_scope
from deuteron.collect.scopes import scope as scope
from deuteron.collect.start_options import DATA_FORMATS as DATA_FORMATS
from deuteron.collect.start_options import PERIODIC_FLUSHING as PERIODIC_FLUSHING
from deuteron.collect.start_options import check_mode as check_mode

__all__ = [
    "_select_backend",
    "DATA_FORMATS",
    "DEFAULT_PROFILE_NAME",
    "PERIODIC_FLUSHING",
    "SessionError",
    "activate",
    "check_mode",
    "cpu_timed_scope",
    "current_profile",
    "deactivate",
    "depth",
    "enter_scope",
    "exit_scope",
    "finalize",
    "find",
    "scope",
    "start",
    "start_session",
]
