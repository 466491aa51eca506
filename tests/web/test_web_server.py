"""``deuteron serve`` as a process: what it serves, what it refuses, and bad input."""

from __future__ import annotations

import http.client
import json
import os
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from deuteron.render.web.packed import unpack
from tests.helpers.cli import run_cli, serving
from tests.helpers.web_inputs import WebInputs


def _get(
    url: str, path: str, method: str = "GET", host: str | None = None, token: bool = True
) -> tuple[int, dict[str, str], bytes]:
    """One raw request: ``path`` below the page's address (its secret token), or with
    ``token=False`` from the server's root."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    headers = {"Host": host} if host is not None else {}
    conn.request(method, (parts.path + path.lstrip("/")) if token else path, headers=headers)
    reply = conn.getresponse()
    body = reply.read()
    conn.close()
    return reply.status, {k.lower(): v for k, v in reply.getheaders()}, body


def test_serves_the_page_bundle_and_answers(web_inputs: WebInputs) -> None:
    files = [str(p) for p in (web_inputs.profile, web_inputs.trace, web_inputs.record, web_inputs.report)]
    with serving(
        *files, str(web_inputs.explain), "--base", str(web_inputs.base), cwd=web_inputs.folder
    ) as url:
        status, headers, body = _get(url, "/")
        assert status == 200 and b'<script src="static/app.js">' in body
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
        assert "default-src 'none'" in headers["content-security-policy"]
        assert headers["x-content-type-options"] == "nosniff"
        status, headers, js = _get(url, "/static/app.js")
        assert status == 200 and headers["content-type"].startswith("text/javascript") and len(js) > 1000
        status, _, raw = _get(url, "/api/index.json")
        index = json.loads(raw)
        assert [len(index[k]) for k in ("profiles", "traces", "records", "checks", "explains")] == [
            1,
            1,
            1,
            1,
            1,
        ]
        assert "base" in index["profiles"][0], "--base makes the profile a diff"
        status, headers, events = _get(url, index["traces"][0]["events"])
        assert status == 200 and len(unpack(events)["start"]) == index["traces"][0]["count"]
        launch = index["records"][0]["launches"][0]
        status, _, raw = _get(url, launch["url"])
        tensors = json.loads(raw)["tensors"]
        status, _, cells = _get(url, tensors[0]["slice_urls"][0])
        assert status == 200 and unpack(cells)["lanes"].sum() > 0
        assert _get(url, "/", method="HEAD")[0] == 200


@pytest.mark.parametrize(
    "path",
    [
        "/../../etc/passwd",
        "/static/../../../etc/passwd",
        "/%2e%2e/%2e%2e/etc/passwd",
        "/api/access/0/99.json",
        "/api/access/7/0.json",
        "/api/trace/5.bin",
        "/api/access/0/0/0/x.bin",
        "/deuteron/web/server.py",
        "/api/../static/app.js/../../../README.md",
        "/api/access/-1/-1.json",
        "/api/access/0/0/9/0.bin",
        "/api/access/0/0/0/99.bin",
        "/api/trace/0.json",
        "/api/index.json/../../x",
    ],
)
def test_no_request_path_reaches_the_filesystem(web_inputs: WebInputs, path: str) -> None:
    with serving(str(web_inputs.record), str(web_inputs.trace), cwd=web_inputs.folder) as url:
        status, _, body = _get(url, path)
        assert status == 404, (path, status, body[:200])
        assert b"root:" not in body


def test_everything_needs_the_printed_token(web_inputs: WebInputs) -> None:
    with serving(str(web_inputs.profile), cwd=web_inputs.folder) as url:
        for path in ("/", "/api/index.json", "/static/app.js", "/AAAAAAAAAAAAAAAA/api/index.json"):
            status, _, body = _get(url, path, token=False)
            assert status == 404 and b"the address deuteron serve printed" in body, path
        assert _get(url, "/api/index.json")[0] == 200


def test_foreign_host_headers_and_other_methods_are_refused(web_inputs: WebInputs) -> None:
    with serving(str(web_inputs.profile), cwd=web_inputs.folder) as url:
        port = urlsplit(url).port
        assert _get(url, "/api/index.json", host=f"evil.example:{port}")[0] == 403  # DNS rebinding
        assert _get(url, "/api/index.json", host="127.0.0.1")[0] == 403  # another port's page
        assert _get(url, "/api/index.json", host=f"localhost:{port}")[0] == 200
        for method in ("POST", "PUT", "DELETE"):
            assert _get(url, "/", method=method)[0] == 405


def test_binds_loopback_only_by_default(web_inputs: WebInputs) -> None:
    with serving(str(web_inputs.profile), cwd=web_inputs.folder) as url:
        assert urlsplit(url).hostname == "127.0.0.1"


def _hostile_files(folder: Path) -> list[tuple[list[str], str]]:
    (folder / "garbage.hatchet").write_bytes(b"\x00\xff" * 50)
    (folder / "empty.json").write_bytes(b"")
    (folder / "zipbomb.npz").write_bytes(b"PK\x03\x04" + b"\x00" * 100)
    (folder / "other.json").write_text('{"hello": "world"}')
    (folder / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    fifo = folder / "pipe"
    if not fifo.exists():
        os.mkfifo(fifo)
    return [
        (["missing.hatchet"], "no such file"),
        (["garbage.hatchet"], "garbage.hatchet"),
        (["empty.json"], "empty"),
        (["zipbomb.npz"], "not a deuteron access record"),
        (["other.json"], "not a file deuteron serve shows"),
        (["deep.json"], "deep.json"),
        (["pipe"], "FIFO"),
        ([str(folder)], "directory"),
        (["--port", "99999", "other.json"], "a port is 0 to 65535"),
        (["--threshold", "2", "other.json"], "share of the total"),
    ]


def test_bad_input_is_one_line_and_exit_2_before_serving(web_inputs: WebInputs, tmp_path: Path) -> None:
    for args, message in _hostile_files(tmp_path):
        proc = run_cli("serve", "--no-browser", *args, cwd=tmp_path, timeout=60)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], (args, proc.stderr)
        assert "Traceback" not in proc.stderr and "http://" not in proc.stdout


def test_base_needs_a_profile_and_html_needs_a_writable_place(web_inputs: WebInputs, tmp_path: Path) -> None:
    proc = run_cli(
        "serve", "--no-browser", str(web_inputs.report), "--base", str(web_inputs.base), cwd=tmp_path
    )
    assert proc.returncode == 2 and "--base compares profiles" in proc.stderr
    proc = run_cli("serve", "--html", str(tmp_path / "no" / "x.html"), str(web_inputs.profile), cwd=tmp_path)
    assert proc.returncode == 2 and "does not exist" in proc.stderr


def test_html_is_one_offline_file(web_inputs: WebInputs, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    files = [str(p) for p in (web_inputs.profile, web_inputs.trace, web_inputs.record)]
    proc = run_cli(
        "serve", "--html", str(out), *files, str(web_inputs.report), str(web_inputs.explain), cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"wrote .*report\.html \(\d+\.\d MB", proc.stderr)
    said = proc.stderr.splitlines()
    assert re.search(r"new\.hatchet: profile, \d+ nodes$", said[0]), said
    assert re.search(r"new\.chrome_trace: trace, \d+ events on 1 lane$", said[1]), said
    assert re.search(r"acc\.npz: access record, 2 launches, [\d,]+ element accesses$", said[2]), said
    assert said[3].endswith("rep.json: check report, 1 finding") and said[4].endswith("kernels"), said
    page = out.read_text()
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert "connect-src" not in page.split("Content-Security-Policy")[1].split(">")[0], "no fetch allowed"
    assert "<script src=" not in page and '<link rel="stylesheet"' not in page
    data = page.split('id="deuteron-data">')[1].split("</script>")[0]
    answers = json.loads(data)
    assert {"/api/index.json"} < set(answers)
    assert page.lower().count("<script") == page.lower().count("</script") == 2


def test_help_shows_examples() -> None:
    proc = run_cli("serve", "-h", cwd=Path.cwd())
    assert proc.returncode == 0 and "deuteron serve --html report.html" in proc.stdout
