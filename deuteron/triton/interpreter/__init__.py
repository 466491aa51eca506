"""Triton's interpreter as Deuteron uses it: events out (launch records with bytes and flops for
profiling; programs and accesses for the sanitizer, whose protocol is :mod:`.sanitizer`) and source
sites of accesses (:mod:`.sites`). What the interpreter lacks or gets wrong is mended in
:mod:`.mends`, one module per mend."""
