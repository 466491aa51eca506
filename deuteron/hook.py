"""Proton's earlier home of the launch-metadata state's name (``triton.profiler.hook``), kept so
code written against it imports unchanged."""

from deuteron.collect.context.state import COMPUTE_METADATA_SCOPE_NAME, COMPUTE_METADATA_SCOPE_PREFIX

__all__ = ["COMPUTE_METADATA_SCOPE_NAME", "COMPUTE_METADATA_SCOPE_PREFIX"]
