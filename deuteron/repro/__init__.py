"""Reproducers: any recorded Triton launch, alone in a file a kernel engineer can change and rerun.

``deuteron run --record-launches`` records (:mod:`.record`, over
:mod:`deuteron.triton.runtime.launch_capture` and :mod:`.values`) into ``NAME.launches.npz``
(:mod:`deuteron.formats.launch_record`); ``deuteron repro`` picks a launch (:mod:`.api`) and writes
its file (:mod:`.writer`, over :mod:`.templates`) with its values beside it.
"""
