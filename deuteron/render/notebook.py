"""Inline views in notebooks (``_repr_html_``): the same standalone page ``serve --html`` writes,
inside an ``<iframe srcdoc>`` so its script and styles stay apart from the notebook's."""

from __future__ import annotations

import html
from typing import Any

from deuteron.model.finding import CheckReport
from deuteron.model.tree import Profile
from deuteron.render.web.data import WebData
from deuteron.render.web.page import standalone_page

HEIGHT_PX = 640


def _frame(data: WebData) -> str:
    answers = data.embedded()
    page = standalone_page(answers, answers["/api/index.json"]["title"])
    return (
        f'<iframe srcdoc="{html.escape(page, quote=True)}" sandbox="allow-scripts" '
        f'style="width:100%;height:{HEIGHT_PX}px;border:1px solid #ddd;border-radius:4px"></iframe>'
    )


def profile_html(profile: Profile, title: str = "profile") -> str:
    data = WebData(title=title)
    data.add_profile(profile, title)
    return _frame(data)


def check_html(report: CheckReport, title: str = "check", record: str | None = None) -> str:
    data = WebData(title=title)
    data.add_check(report, title)
    if record is not None:
        data.add_file(record)
    return _frame(data)


def explain_html(document: dict[str, Any], title: str = "explain") -> str:
    data = WebData(title=title)
    data.add_explain(document, title)
    return _frame(data)
