"""The web UI's answers, one module per view (:mod:`.profile`, :mod:`.timeline`, :mod:`.accesses`,
:mod:`.explain`), gathered by :mod:`.data` (the files of one page, every answer by request path) and
packed into a page by :mod:`.page`. The server (``deuteron.web``), ``serve --html`` and notebooks
share them; the drawing is in ``frontend/src/views/<view>/``."""
