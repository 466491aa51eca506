"""``deuteron serve``'s HTTP server: the page, the bundle and the answers of one
:class:`~deuteron.render.web.data.WebData`, on 127.0.0.1 by default.

What a request can reach is a fixed table: ``/``, ``/static/app.js``, ``/static/app.css`` and the
``/api/`` answers; no part of a request's path ever reaches the filesystem. Only a trace's window
(``/api/trace/N/window.bin?t0=…&t1=…&px=…``, level of detail) reads the query string; a bad one is
a 400 of one line. A ``Host`` header naming another host is refused, so a web page elsewhere
cannot rebind its own name to this port (DNS rebinding) and read what is shown here."""

from __future__ import annotations

import json
import secrets
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from deuteron.render.web.data import WebData
from deuteron.render.web.page import SERVED_CSP, bundle, served_page
from deuteron.render.web.trace_window import BadWindow

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


class Server(ThreadingHTTPServer):
    """One page's server. Everything lives under ``/TOKEN/``, a secret made at start and printed
    in the address: another user of this machine, or a page in the browser, cannot guess it."""

    daemon_threads = True

    def __init__(self, data: WebData, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__((host, port), Handler)
        self.data = data
        self.token = secrets.token_urlsafe(12)
        js, css = bundle()
        title = data.index()["title"]  # resolves the records before the warm-up shares them
        self.routes: dict[str, tuple[str, bytes]] = {
            "": ("text/html; charset=utf-8", served_page(title).encode()),
            "static/app.js": ("text/javascript; charset=utf-8", js.encode()),
            "static/app.css": ("text/css; charset=utf-8", css.encode()),
        }
        self.port = int(self.server_address[1])
        # Bound to every interface, the user chose to be reached by any name; the token still guards.
        self.any_host = host in ("0.0.0.0", "::", "")
        names = set(LOOPBACK_NAMES) | {host}
        self.allowed_hosts = {f"{n}:{self.port}" for n in names}
        threading.Thread(target=self._warm, name="deuteron-warm", daemon=True).start()

    def _warm(self) -> None:
        try:
            self.data.warm()
        except Exception as exc:  # the request that needs it will report it
            print(f"deuteron serve: warning: {type(exc).__name__}: {exc}", file=sys.stderr)

    @property
    def url(self) -> str:
        host = str(self.server_address[0])
        shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
        return f"http://{shown}:{self.port}/{self.token}/"


class Handler(BaseHTTPRequestHandler):
    """GET and HEAD only; every answer carries the page's CSP and is never cached."""

    server: Server
    server_version = "deuteron"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        """Quiet: the terminal shows only what went wrong (see :meth:`_fail`)."""

    def do_GET(self) -> None:  # noqa: N802 - the base class's name
        self._answer(send_body=True)

    def do_HEAD(self) -> None:  # noqa: N802
        self._answer(send_body=False)

    def _refuse(self) -> None:
        self._send(HTTPStatus.METHOD_NOT_ALLOWED, "text/plain", b"only GET and HEAD\n", True)

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse  # noqa: N815

    def _answer(self, send_body: bool) -> None:
        """Host checked, then the token, then a fixed table of routes and the data's answers."""
        server = self.server
        if not server.any_host and self.headers.get("Host", "") not in server.allowed_hosts:
            self._send(HTTPStatus.FORBIDDEN, "text/plain", b"unknown Host header\n", send_body)
            return
        parts = urlsplit(self.path)
        path = parts.path
        prefix = f"/{server.token}/"
        if not path.startswith(prefix):
            message = b"not found: open the address deuteron serve printed (it holds the page's token)\n"
            self._send(HTTPStatus.NOT_FOUND, "text/plain", message, send_body)
            return
        path = path[len(prefix) - 1 :]  # "/..." below the token
        route = server.routes.get(path[1:])
        if route is not None:
            self._send(HTTPStatus.OK, route[0], route[1], send_body)
            return
        if not path.startswith("/api/"):
            self._send(HTTPStatus.NOT_FOUND, "text/plain", b"not found\n", send_body)
            return
        try:
            found = self.server.data.answer(path, parts.query)
        except BadWindow as exc:  # the request's fault: one line back, nothing on the terminal
            self._send(HTTPStatus.BAD_REQUEST, "text/plain", f"{exc}\n".encode(), send_body)
            return
        except Exception as exc:  # a bug or a damaged record: say so, keep serving
            self._fail(path, exc, send_body)
            return
        if found is None or found[1] is None:
            self._send(HTTPStatus.NOT_FOUND, "text/plain", b"no such answer\n", send_body)
            return
        kind, value = found
        body = value if isinstance(value, bytes) else json.dumps(value, separators=(",", ":")).encode()
        self._send(HTTPStatus.OK, kind, body, send_body)

    def _fail(self, path: str, exc: Exception, send_body: bool) -> None:
        message = f"{path}: {type(exc).__name__}: {exc}"
        print(f"deuteron serve: error: {message}", file=sys.stderr)
        self._send(HTTPStatus.INTERNAL_SERVER_ERROR, "text/plain", (message + "\n").encode(), send_body)

    def _send(self, status: HTTPStatus, kind: str, body: bytes, send_body: bool) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        # As a header, the policy can also forbid framing (a <meta> policy cannot).
        self.send_header("Content-Security-Policy", SERVED_CSP + "; frame-ancestors 'none'")
        self.end_headers()
        if send_body:
            try:
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):  # the browser went away: fine
                pass
