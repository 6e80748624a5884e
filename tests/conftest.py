"""Shared test settings."""

import pytest


@pytest.fixture(scope="session", autouse=True)
def _private_calibration_cache(tmp_path_factory):
    """Calibrations cached in a directory of this session, never the user's cache; subprocesses
    started by tests inherit it through the environment."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CGDR_DES_CACHE_DIR", str(tmp_path_factory.mktemp("calibration-cache")))
        mp.delenv("CGDR_DES_CACHE", raising=False)
        yield


@pytest.fixture(autouse=True)
def _no_progress(monkeypatch):
    """Progress lines off (tests read stderr line by line); tests of progress turn them on themselves."""
    monkeypatch.setenv("CGDR_DES_PROGRESS", "off")
