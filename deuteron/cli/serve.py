"""``deuteron serve``: profiles, traces, access records, check and explain reports in one offline
web UI, served on 127.0.0.1 or written as one self-contained page (``--html``)."""

from __future__ import annotations

import argparse
import errno
import os
import sys
import time
import webbrowser
from typing import Any, TextIO

from deuteron.cli.arguments import add_command, number_in
from deuteron.formats.files import check_writable
from deuteron.model.errors import DeuteronError
from deuteron.process.terminal import say
from deuteron.render.web.trace_window import LOD_EVENTS

EXAMPLES = """\
examples:
  deuteron serve run.hatchet                        profile: flame graph and tree table
  deuteron serve new.hatchet --base old.hatchet     the diff of two profiles
  deuteron serve run.chrome_trace                   the timeline
  deuteron check --record acc.npz --json rep.json k.py && deuteron serve acc.npz rep.json
  deuteron explain --json ex.json k.py && deuteron serve ex.json
  deuteron serve --html report.html run.hatchet acc.npz rep.json ex.json   one file, no server
  deuteron serve --perfetto job.pftrace run.rank0.chrome_trace run.rank1.chrome_trace   for Perfetto
"""
DEFAULT_PORT = 8707


_port = number_in(int, "a port number", lambda value: 0 <= value <= 65535, "a port is 0 to 65535, not {}")
_fraction = number_in(
    float, "a number", lambda value: 0 <= value < 1, "a share of the total is 0 to 1, not {}"
)


DESCRIPTION = """\
Show profiles (.hatchet, Proton's files too), Chrome traces, access records
(check --record) and check/explain reports (--json) in one web UI. It serves only the
files named here, on 127.0.0.1, and needs no network; --html writes one page instead."""


def add_parser(sub: Any) -> None:
    p = add_command(
        sub,
        "serve",
        "open profiles, traces, access records and reports in an offline web UI",
        DESCRIPTION,
        epilog=EXAMPLES,
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="files to show (their kind is read from them)")
    p.add_argument("--base", metavar="PROFILE", help="compare the profile(s) with this one (the diff view)")
    p.add_argument("--html", metavar="OUT", help="write one self-contained page to OUT instead of serving")
    p.add_argument(
        "--perfetto",
        metavar="OUT",
        help="write the Chrome traces given (several ranks of one job: joined on one clock) as one "
        "Perfetto trace to OUT instead of serving; ui.perfetto.dev and trace_processor open it",
    )
    p.add_argument("--port", type=_port, default=None, help=f"port (default {DEFAULT_PORT}, or a free one)")
    p.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)"
    )
    p.add_argument("--no-browser", action="store_true", help="do not open a browser")
    p.add_argument(
        "--threshold",
        type=_fraction,
        default=None,
        help=(
            "leave out profile nodes below this share of the total, e.g. 0.001; 0 keeps all "
            "(default: all, up to 200,000 nodes; a larger tree is cut to about that many)"
        ),
    )
    p.add_argument("--title", default="", help="the page's title (default: the files' names)")
    lod = p.add_mutually_exclusive_group()
    lod.add_argument(
        "--lod",
        dest="lod",
        action="store_const",
        const=True,
        default=None,
        help=(
            "show the traces with level of detail whatever their size: kept in a DuckDB store "
            "(pip install deuteron[traces]), the page gets the events of the window it shows, merged "
            f"where narrower than a pixel (default: past {LOD_EVENTS:,} events in all)"
        ),
    )
    lod.add_argument(
        "--no-lod",
        dest="lod",
        action="store_const",
        const=False,
        help="send the page every event whatever the traces' size (no store)",
    )
    p.set_defaults(handler=run_serve)


def _size(n: float) -> str:
    """Bytes as people read them: 2.0 GB, 380 MB, 0.3 MB, 12 kB, 512 bytes."""
    if n >= 1e9:
        return f"{n / 1e9:.1f} GB"
    if n >= 1e7:
        return f"{n / 1e6:.0f} MB"
    if n >= 1e5:
        return f"{n / 1e6:.1f} MB"
    return f"{n / 1e3:.0f} kB" if n >= 1e3 else f"{n:.0f} bytes"


class Progress:
    """How far reading several traces is (parsing JSON goes at about 30 MB/s a core: 64 ranks'
    2 GB take minutes): one line rewritten in place when stderr is a terminal (cleared by
    :meth:`finish` if reading stops half-way, so an error starts a line of its own), else a line
    each tenth of the bytes, so a log keeps ten lines, not one per file."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.tenths = 0
        self.open = False  # a line in place, not ended

    def __call__(self, done: int, total: int, done_bytes: int, total_bytes: int) -> None:
        if total < 2:
            return
        line = f"deuteron serve: reading {done}/{total} traces, {_size(done_bytes)} of {_size(total_bytes)}"
        if self.tty:
            self.open = done < total
            print(f"\r{line}\x1b[K", end="" if self.open else "\n", file=self.stream, flush=True)
            return
        tenths = done_bytes * 10 // max(total_bytes, 1)
        if tenths > self.tenths:
            self.tenths = tenths
            print(line, file=self.stream, flush=True)

    def finish(self) -> None:
        if self.open:
            print("\r\x1b[K", end="", file=self.stream, flush=True)
            self.open = False


def load(args: argparse.Namespace) -> Any:
    """Every file read and checked before anything is served or written."""
    from deuteron.render.web.data import WebData

    data = WebData(title=args.title, threshold=args.threshold)
    started = time.perf_counter()
    progress = Progress(sys.stderr)
    try:
        for path, line in data.add_files(args.files, base=args.base, lod=args.lod, progress=progress):
            took = time.perf_counter() - started
            say(f"deuteron serve: {path}: {line}" + (f" (read in {took:.1f} s)" if took >= 0.5 else ""))
            started = time.perf_counter()
    finally:
        progress.finish()
    if args.base and not data.profiles:
        raise DeuteronError("--base compares profiles: give a profile (.hatchet) to compare with it")
    return data


def run_serve(args: argparse.Namespace) -> int:
    if args.perfetto:
        if args.html:
            raise DeuteronError("--perfetto and --html each write a file instead of serving: give one")
        check_writable(args.perfetto, "--perfetto")
        return _write_perfetto(args.files, args.perfetto)
    out = check_writable(args.html, "--html") if args.html else None
    data = load(args)
    if out is not None:
        return _write_html(data, str(out))
    return _serve(data, args)


def _write_html(data: Any, out: str) -> int:
    from deuteron.render.web.page import write_standalone

    started = time.perf_counter()
    answers = data.embedded()
    path = write_standalone(answers, answers["/api/index.json"]["title"], out)
    size = os.path.getsize(path)
    took = time.perf_counter() - started
    say(f"deuteron serve: wrote {path} ({size / 1e6:.1f} MB, {took:.1f} s); open it in a browser, no server")
    return 0


def _write_perfetto(files: list[str], out: str) -> int:
    """The traces as Perfetto's own format (protobuf): read as a stream, several ranks of one job
    joined on one clock, as ``deuteron serve`` shows them."""
    from deuteron.formats import chrome_trace, perfetto_trace
    from deuteron.process import parallel
    from deuteron.render.web.data import sniff
    from deuteron.view import rank_traces

    started = time.perf_counter()
    for path in files:
        kind = sniff(path)
        if kind != "trace":
            raise DeuteronError(f"{path}: a {kind}, not a Chrome trace; --perfetto writes traces")
    progress = Progress(sys.stderr)  # on a terminal only: in a log, an error stays one line
    try:
        traces = parallel.map_files(chrome_trace.read_columns, files, progress if progress.tty else None)
    finally:
        progress.finish()
    lanes = None
    columns = traces[0]
    if len(traces) > 1:
        apart = rank_traces.not_one_job(traces, files) if rank_traces.is_job(traces, files) else "not ranks"
        if apart is not None:
            raise DeuteronError(f"--perfetto joins the traces of one job's ranks; these are {apart}")
        job = rank_traces.join(traces, files)
        columns, lanes = job.columns, job.lane_ranks
    stats = perfetto_trace.write(columns, out, lanes)
    took = time.perf_counter() - started
    say(
        f"deuteron serve: wrote {out} ({stats.slices:,} slices, {stats.flows:,} arrows, {took:.1f} s); "
        "open it in ui.perfetto.dev or with trace_processor"
    )
    return 0


def _serve(data: Any, args: argparse.Namespace) -> int:
    make_server = getattr(args, "server", None)
    if make_server is None:
        raise DeuteronError("this entry point cannot serve; run 'deuteron serve' (or python -m deuteron)")
    ports = [args.port] if args.port is not None else [DEFAULT_PORT, 0]
    server = None
    for port in ports:
        try:
            server = make_server(data, args.host, port)
            break
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE or port == ports[-1]:
                raise DeuteronError(f"cannot listen on {args.host}:{port} ({exc.strerror or exc})") from None
    assert server is not None
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        say(f"deuteron serve: warning: listening on {args.host}: other machines can reach this page")
    print(f"deuteron serve: {server.url}  (Ctrl-C to stop)", flush=True)
    if not args.no_browser:
        try:
            webbrowser.open(server.url)
        except Exception:  # no browser here: the address is printed above
            pass
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("deuteron serve: stopped", file=sys.stderr)
    finally:
        server.server_close()
    return 0
