import os

# litellm must not reach for the network when a test imports it.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")

import pytest  # noqa: E402

import mua_gym  # noqa: E402


@pytest.fixture
def mock():
    return mua_gym.get_domain("mock")


@pytest.fixture
def world(mock):
    w = mock.new_world()
    yield w
    w.close()


@pytest.fixture
def all_mock_tasks(mock):
    return [t for split in ("train", "dev", "test") for t in mock.tasks(split)]
