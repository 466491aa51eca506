"""Reading and writing files safely: every file we read may be hostile, every write may fail.

Reading: one size limit (``DEUTERON_MAX_FILE_BYTES``, default 1 GiB) checked before a byte is read;
only regular files (a FIFO would block forever, ``/dev/zero`` never ends); every ``OSError`` (a
symlink loop, a name too long, no permission) becomes a one-line :class:`FormatError`.

Writing: :func:`check_writable` says before any work whether a file can be written (the folder
exists and takes a new file, the name is not a folder), and fixes the path as absolute so a later
``chdir`` cannot move it. :func:`atomic_write` writes a temporary file with a name unique to the
writer in the same folder, then renames it over the target: a crash or a full disk never leaves a
truncated file or a ``.tmp`` behind, and two writers of one name never share a temporary file.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from deuteron.model.errors import DeuteronError

MAX_BYTES_ENV = "DEUTERON_MAX_FILE_BYTES"
DEFAULT_MAX_BYTES = 1 << 30  # a million-node profile is about 150 MB


class FormatError(DeuteronError, ValueError):
    """A file that is not what it claims to be; the message names the file and the problem."""


class OutputError(DeuteronError, OSError):
    """A file that cannot be written; the message names the file and the reason."""


def max_bytes() -> int:
    """The most bytes a reader takes (``DEUTERON_MAX_FILE_BYTES``; a bad value keeps the default)."""
    text = os.environ.get(MAX_BYTES_ENV, "").strip()
    try:
        value = int(text) if text else DEFAULT_MAX_BYTES
    except ValueError:
        return DEFAULT_MAX_BYTES
    return value if value > 0 else DEFAULT_MAX_BYTES


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def regular_file(path: str | os.PathLike[str], what: str = "file", limited: bool = True) -> int:
    """The size of ``path`` after checking it is a regular file within the size limit (no limit
    when not ``limited``: a reader whose memory does not grow with the file)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise FormatError(f"{path}: no such file") from None
    except OSError as exc:
        raise FormatError(f"{path}: cannot read it ({_reason(exc)})") from None
    if stat.S_ISDIR(info.st_mode):
        raise FormatError(f"{path}: is a directory, not a {what}") from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a FIFO" if stat.S_ISFIFO(info.st_mode) else "a device or socket"
        raise FormatError(f"{path}: is {kind}, not a regular file; give a {what} file")
    limit = max_bytes()
    if limited and info.st_size > limit:
        raise FormatError(
            f"{path}: {info.st_size:,} bytes is more than the limit of {limit:,} "
            f"(raise it with {MAX_BYTES_ENV}=BYTES)"
        )
    return info.st_size


def read_bytes(path: str | os.PathLike[str], what: str = "file") -> bytes:
    """The whole file, after :func:`regular_file`; never more than the limit even if it grows."""
    regular_file(path, what)
    limit = max_bytes()
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise FormatError(f"{path}: cannot read it ({_reason(exc)})") from None
    if data[:2] == GZIP_MAGIC:
        data = _gunzip(path, data, limit)
    if len(data) > limit:
        raise FormatError(
            f"{path}: more than the limit of {limit:,} bytes (raise it with {MAX_BYTES_ENV}=BYTES)"
        )
    return data


GZIP_MAGIC = b"\x1f\x8b"


def _gunzip(path: str | os.PathLike[str], data: bytes, limit: int) -> bytes:
    """A gzip file's contents: profiles and traces are often kept gzipped (``.hatchet.gz``,
    PyTorch's ``.json.gz``). Never more than ``limit`` bytes come out, so a small file that
    inflates to gigabytes stops at the limit like a large one."""
    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflate.decompress(data, limit + 1)
    except zlib.error as exc:
        raise FormatError(f"{path}: a damaged gzip file ({exc})") from None
    if len(out) <= limit and not inflate.eof:
        raise FormatError(f"{path}: a gzip file cut short")
    return out


SOURCE_LIMIT = 1 << 20  # a kernel source file larger than this is not kept beside a report


def source_text(path: str | os.PathLike[str], limit: int = SOURCE_LIMIT) -> str | None:
    """A source file's text to keep in a report (records and explain reports carry the kernels'
    files, so a view never reads paths found inside a file); None when it cannot be read or is
    over ``limit`` bytes."""
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError:
        return None
    return data.decode("utf-8", "replace") if len(data) <= limit else None


def check_writable(path: str | os.PathLike[str], option: str = "") -> Path:
    """The absolute path, after making sure a file can be written there now; OutputError says why not.

    A probe file is created and removed in the folder: permissions, a read-only file system and a
    missing folder all show up before the work whose result would be lost.
    """
    label = f"{option} {path}" if option else str(path)
    try:
        target = Path(os.path.abspath(path))
    except (OSError, ValueError) as exc:
        raise OutputError(f"{label}: not a usable path ({exc})") from None
    folder = target.parent
    if not folder.is_dir():
        raise OutputError(f"{label}: folder {folder} does not exist")
    if target.is_dir():
        raise OutputError(f"{label} is a folder; give a file name")
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=f".{target.name[:80]}.", suffix=".probe")
    except OSError as exc:
        raise OutputError(f"{label}: cannot write in {folder} ({_reason(exc)})") from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return target


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "w") -> Iterator[IO[Any]]:
    """A file to write ``path`` through: renamed over ``path`` when the block ends without error,
    removed (leaving any previous ``path`` intact) when it does not. OutputError on any OSError."""
    target = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name[:80]}.", suffix=".tmp")
    except OSError as exc:
        raise OutputError(f"could not write {target}: {_reason(exc)}") from None
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it 0600: a profile is as readable as any file
        with os.fdopen(
            fd, mode + ("" if "b" in mode else ""), encoding=None if "b" in mode else "utf-8"
        ) as f:
            yield f  # type: ignore[misc]
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise OutputError(f"could not write {target}: {_reason(exc)}") from None
        raise


def _umask() -> int:
    """The process's umask (read by setting it, so set back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write(path: str | os.PathLike[str], data: str | bytes) -> Path:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_open`)."""
    with atomic_open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
    return Path(path)
