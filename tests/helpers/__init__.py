"""What the tests share, and the only test code a test module imports (besides the corpora
under tests/check_corpus, tests/explain_corpus and tests/fixtures).

One module a job: ``paths`` (where the repository's inputs are), ``cli`` (running deuteron in a
fresh process), ``profiles`` (walking a profile or its hatchet JSON by names), ``sources``
(script text the tests write and run), ``kernels`` (small Triton kernels with known counts),
``gpu`` (the ``*_gpu.py`` tests' runner), ``pdb_session`` (``deuteron check`` driven through
pdb), ``browser`` (Playwright's fixtures), ``web_inputs`` (what the web tests' session fixtures
make), ``once`` (a session input made once per run under xdist), ``cupti_records``,
``instrumentation`` and ``rank_traces`` (inputs built from recorded files), ``clean_tree`` (what a
run left in the checkout, for tests/conftest.py).

Nothing here imports triton or torch at import time except ``kernels`` (which needs
TRITON_INTERPRET set first: tests/conftest.py sets it).
"""
