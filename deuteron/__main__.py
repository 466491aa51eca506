"""The ``deuteron`` command: composes the two leaves, the command line (``cli/``) and the web
server (``web/``), which never import each other. ``python -m deuteron`` and the installed
``deuteron`` script both start here."""

from __future__ import annotations

from typing import Any

from deuteron.cli import main as cli_main


def _server(data: Any, host: str, port: int) -> Any:
    """``deuteron serve``'s server, imported only when serving."""
    from deuteron.web.server import Server

    return Server(data, host, port)


def main() -> int:
    return cli_main(server=_server)


if __name__ == "__main__":
    raise SystemExit(main())
