"""The web UI's tests' session inputs (tests/helpers/web_inputs.py says what they are), made once
per run, and Playwright's fixtures."""

from __future__ import annotations

import pytest

from tests.helpers.browser import browser, watched  # noqa: F401 - fixtures for the browser tests
from tests.helpers.once import made_once
from tests.helpers.web_inputs import SampledInputs, WebInputs, make_sampled_inputs, make_web_inputs


@pytest.fixture(scope="session")
def web_inputs(tmp_path_factory: pytest.TempPathFactory) -> WebInputs:
    return made_once(tmp_path_factory, "web", make_web_inputs)


@pytest.fixture(scope="session")
def sampled_inputs(tmp_path_factory: pytest.TempPathFactory) -> SampledInputs:
    return made_once(tmp_path_factory, "sampled", make_sampled_inputs)
