"""What Deuteron does to the process it runs in, apart from any one job: run the user's program as
Python would (:mod:`.program`: a script, ``-m`` module or pytest, however it ends), hold SIGINT and
SIGTERM while a file is written (:mod:`.signals`), and change loaded modules reversibly
(:mod:`.patches`: every patch of Triton, torch or JAX grouped, reference-counted, undone in reverse),
and make text from files safe to print on a terminal (:mod:`.terminal`).
Used by collect, check and explain alike; imports none of them."""
