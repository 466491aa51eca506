"""The web UI's page: the built bundle (``deuteron/web/static``, made from ``frontend/`` by Vite)
plus, for a page with no server (``serve --html``, notebooks), every answer inside it.

A standalone page forbids every network request through its Content-Security-Policy: it opens
from disk, offline, and cannot leak what it shows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from deuteron.formats.files import atomic_write
from deuteron.model.errors import DeuteronError

STATIC = Path(__file__).resolve().parents[2] / "web" / "static"  # deuteron/web/static
SERVED_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'"
)
STANDALONE_CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; "
    "base-uri 'none'; form-action 'none'"
)


def bundle() -> tuple[str, str]:
    """(JavaScript, CSS) of the built UI; a one-line error when the package was built without it."""
    try:
        return (STATIC / "app.js").read_text("utf-8"), (STATIC / "app.css").read_text("utf-8")
    except OSError:
        raise DeuteronError(
            f"the web UI's bundle is missing from {STATIC}; "
            "rebuild it: cd frontend && npm ci && npm run build"
        ) from None


def _script_safe(text: str) -> str:
    """Text that cannot end the <script> element holding it (nor open a comment there)."""
    return text.replace("</", "<\\/").replace("<!--", "<\\!--")


def served_page(title: str) -> str:
    """The page the server sends: the bundle by reference and data fetched from ``api/``, both
    relative to the page (the server puts everything under a secret path)."""
    return _page(
        title,
        SERVED_CSP,
        '<link rel="stylesheet" href="static/app.css">',
        '<script src="static/app.js"></script>',
    )


def standalone_page(answers: dict[str, Any], title: str) -> str:
    """One page holding the bundle and every answer: opens from disk with no server, no network."""
    js, css = bundle()
    # "<" as its JSON escape: the data can then hold no "</script" nor "<!--".
    data = json.dumps(answers, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")
    style = css.replace("</", "<\\/")
    return _page(
        title,
        STANDALONE_CSP,
        f"<style>{style}</style>",
        f'<script type="application/json" id="deuteron-data">{data}</script>\n'
        f"<script>{_script_safe(js)}</script>",
    )


def _page(title: str, csp: str, head: str, body: str) -> str:
    safe_title = title.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<link rel="icon" href="data:,">\n'
        f"<title>{safe_title} — Deuteron</title>\n{head}\n</head>\n"
        f'<body><div id="app"></div>\n{body}\n</body></html>\n'
    )


def write_standalone(answers: dict[str, Any], title: str, path: str) -> Path:
    """Write :func:`standalone_page` atomically."""
    return atomic_write(path, standalone_page(answers, title))
