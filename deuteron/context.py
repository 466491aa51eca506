"""Proton's ``context`` module: how deep the calling thread is in a session's scopes."""

from deuteron.collect.api import depth

__all__ = ["depth"]
