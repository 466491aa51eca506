"""The link a job's collectives are held to (deuteron.model.devices.assumed_link)."""

from __future__ import annotations

from deuteron.model.devices import LINKS, NAMED_DEVICES, assumed_link


def _table(name: str) -> dict[str, dict[str, dict[str, object]]]:
    return {"CUDA": {"0": NAMED_DEVICES[name].as_table_row()}}


def test_a_host_of_sxm_parts_talks_over_nvlink_and_hosts_over_their_network() -> None:
    assert assumed_link(_table("h100"), 1) == (LINKS["nvlink4"], "one host of H100/H200 SXMs")
    assert (
        assumed_link(_table("h200"), 1)[0] is None or assumed_link(_table("h200"), 1)[0] == LINKS["nvlink4"]
    )
    assert assumed_link(_table("a100"), 1)[0] == LINKS["nvlink3"]
    assert assumed_link(_table("b200"), 1)[0] == LINKS["nvlink5"]
    assert assumed_link(_table("l40s"), 1)[0] == LINKS["pcie4"]
    assert assumed_link(_table("h100"), 4) == (LINKS["ib-ndr"], "4 hosts: their network")
    assert assumed_link({}, 1) == (None, "no link known for these GPUs")
    assert assumed_link(_table("mi300x"), 1)[0] is None  # AMD's Infinity Fabric: not in the table


def test_peaks_are_per_direction() -> None:
    # the datasheets' totals are both directions: NVLink 4 900 GB/s, PCIe Gen5 x16 128 GB/s; NDR 400 Gb/s
    assert LINKS["nvlink4"].bytes_per_s == 450e9 and LINKS["pcie5"].bytes_per_s == 64e9
    assert LINKS["ib-ndr"].bytes_per_s == 400e9 / 8
