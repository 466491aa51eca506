"""What ``deuteron view --advise`` finds, in one place: the terminal (``deuteron view``) and the web
UI (``deuteron serve``'s advice panel, :mod:`deuteron.render.web.advice`) both ask here, so the
page shows exactly what the terminal prints."""

from __future__ import annotations

from collections.abc import Sequence

from deuteron.model.tree import Profile
from deuteron.view import advise
from deuteron.view.advise import Advice
from deuteron.view.collectives import collective_findings
from deuteron.view.ranks import advise_ranks


def findings(profiles: Sequence[Profile], sources: Sequence[str]) -> list[Advice]:
    """The advice on one profile (its steps from the trace beside it, its collective calls said
    alone), or on several ranks' profiles of one job (side by side, the straggler, the waits)."""
    if len(profiles) > 1:
        return advise_ranks(profiles, sources)
    return advise.advise(profiles[0], source=sources[0]) + collective_findings(list(profiles))
