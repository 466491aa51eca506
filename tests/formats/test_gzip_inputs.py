"""Gzipped inputs: profiles and traces are often kept as ``.gz`` (the recorded DDP ranks here are),
and every reader takes them as they are, within the same size limit as plain files."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from deuteron.formats import FormatError
from deuteron.formats.files import MAX_BYTES_ENV, read_bytes
from deuteron.render.web.data import WebData, sniff
from tests.helpers.cli import run_cli
from tests.helpers.paths import REPO

DDP = REPO / "tests" / "fixtures" / "ranks" / "ddp"


def test_a_gzipped_profile_reads_as_its_contents() -> None:
    path = DDP / "deuteron.rank0.hatchet.gz"
    assert read_bytes(path) == gzip.decompress(path.read_bytes())


def test_view_shows_a_gzipped_profile(tmp_path: Path) -> None:
    proc = run_cli("view", str(DDP / "deuteron.rank0.hatchet.gz"), "-m", "time/ms", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "ROOT" in proc.stdout and "ncclDevKernel_Broadcast_RING_LL" in proc.stdout


def test_serve_sniffs_and_reads_gzipped_traces_and_profiles() -> None:
    assert sniff(str(DDP / "deuteron.rank0.chrome_trace.gz")) == "trace"
    assert sniff(str(DDP / "deuteron.rank0.hatchet.gz")) == "profile"
    data = WebData()
    said = dict(data.add_files([str(p) for p in sorted(DDP.glob("*.gz"))]))
    assert said["2 ranks"].startswith("one timeline")
    assert len(data.index()["profiles"]) == 2 and len(data.index()["traces"]) == 1


def test_a_small_gzip_that_inflates_past_the_limit_stops_at_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bomb = tmp_path / "bomb.hatchet"
    bomb.write_bytes(gzip.compress(b"[" + b" " * 5_000_000 + b"]"))
    assert bomb.stat().st_size < 20_000
    monkeypatch.setenv(MAX_BYTES_ENV, "1000000")
    with pytest.raises(FormatError, match="more than the limit of 1,000,000 bytes"):
        read_bytes(bomb)


def test_a_cut_or_damaged_gzip_is_one_line(tmp_path: Path) -> None:
    whole = (DDP / "deuteron.rank0.hatchet.gz").read_bytes()
    cut = tmp_path / "cut.hatchet"
    cut.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(FormatError, match="a gzip file cut short"):
        read_bytes(cut)
    damaged = tmp_path / "damaged.hatchet"
    damaged.write_bytes(whole[:10] + bytes(200) + whole[210:])
    with pytest.raises(FormatError, match="damaged gzip file"):
        read_bytes(damaged)
    proc = run_cli("view", str(cut), cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "cut short" in proc.stderr
