"""Shared test settings."""

import pytest


@pytest.fixture(autouse=True)
def _no_progress(monkeypatch):
    """Progress lines off (tests read stderr line by line); tests of progress turn them on themselves."""
    monkeypatch.setenv("CGDR_DES_PROGRESS", "off")
