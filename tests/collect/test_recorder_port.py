"""The recorder port is the whole of what backends know of a session: every call a backend makes on
a session is one of ``Recorder``'s members, and ``Session`` has each of them."""

from __future__ import annotations

import re
from pathlib import Path

from deuteron.collect.backends import port
from deuteron.collect.session import Session

BACKENDS = Path(port.__file__).parent
MEMBERS = {name for name in port.Recorder.__dict__ if not name.startswith("_")} | set(
    port.Recorder.__annotations__
)


def test_the_port_is_narrow() -> None:
    assert len(MEMBERS) <= 13, sorted(MEMBERS)


def test_backends_reach_a_session_only_through_the_port() -> None:
    used: dict[str, set[str]] = {}
    for path in BACKENDS.rglob("*.py"):
        for name in re.findall(r"\bsession\.([a-z_]+)\b", path.read_text()):
            used.setdefault(name, set()).add(path.name)
    outside = {name: files for name, files in used.items() if name not in MEMBERS}
    assert not outside, f"backends use session members outside the Recorder port: {outside}"


def test_a_session_has_every_member_of_the_port() -> None:
    session = Session(0, "port", backend="interpreter")
    assert [name for name in sorted(MEMBERS) if not hasattr(session, name)] == []
    assert session.setup.session_id == 0 and session.setup.context == "shadow"
