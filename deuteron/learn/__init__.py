"""``deuteron learn``: Triton exercises that check themselves, from a vector add to a fused
attention forward.

Each exercise (:mod:`.exercises`, files in ``data/``) has a statement, a starter file, a
reference solution and a spec; :mod:`.grade` runs the learner's kernel under ``deuteron.check``
on several shapes against a torch reference; :mod:`.text` prints the verdict, with the
checker's findings as hints (:mod:`.hints`); :mod:`.progress` keeps what was done in the user's
data directory; :mod:`.notebook` writes all of it as a Jupyter notebook.

    from deuteron.learn import check
    check(3, "learn/03_outer_add.py")
"""

from deuteron.learn.api import check
from deuteron.learn.catalog import Exercise
from deuteron.learn.errors import LearnError
from deuteron.learn.exercises import all_exercises, find
from deuteron.learn.grade import Grade

__all__ = ["Exercise", "Grade", "LearnError", "all_exercises", "check", "find"]
