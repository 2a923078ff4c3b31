"""Keep the so3 disk cache of these tests in a temporary directory, not in the user's cache."""
import pytest


@pytest.fixture(autouse=True, scope="session")
def _so3_cache_dir(tmp_path_factory):
    patch = pytest.MonkeyPatch()
    patch.setenv("PRODUCT_INTERACTIONS_CACHE", str(tmp_path_factory.mktemp("so3-cache")))
    yield
    patch.undo()
