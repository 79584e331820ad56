import pytest


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Every catalog test gets its own on-disk cache directory."""
    monkeypatch.setenv("OLMKIT_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
