"""Triton's interpreter as Deuteron uses it: events out, launch records with bytes and flops for
profiling (:mod:`.profiling`, with each program's ``pl.scope``s from :mod:`.scopes`) and programs
and accesses for the sanitizer (:mod:`.checking`; its protocol is :mod:`.sanitizer_protocol`), wired into
the interpreter by :mod:`.adapter`, where listeners ``install`` and ``attach``; and source sites of
accesses (:mod:`.sites`). What the interpreter lacks or gets wrong is mended in :mod:`.mends`, one
module per mend."""
