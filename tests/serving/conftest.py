"""Fixtures of the OpenEnv server tests: a frozen pool, a curator's token and a server factory."""
from __future__ import annotations

import pytest

from serving import services
from tests.curation.factories import make_pool
from tests.support.env_server import EnvServer

DEPLOYMENT_SECRET = "deployment-secret-for-tests"


@pytest.fixture
def pool(curator):
    return make_pool(curator, name="served")


@pytest.fixture
def token(curator) -> str:
    """A curator's token (named "ada's trainer"): its secret."""
    _, secret = services.token_create(name="ada's trainer", created_by=curator)
    return secret


@pytest.fixture
def serve(worker_env, tmp_path, pool):
    """serve(*options, idle_s=...) -> a running EnvServer for `pool` (studio-judge-led, 192 px)."""
    started: list[EnvServer] = []

    def start(*options: str, idle_s: float = 600.0, recipe: str = "studio-judge-led") -> EnvServer:
        env = {**worker_env, "PAINTAPP_ENV_TOKEN": DEPLOYMENT_SECRET, "PAINTAPP_ENV_IDLE_S": str(idle_s)}
        server = EnvServer(env=env, arguments=("--pool", pool.label, "--recipe", recipe, "--render-size", "192",
                                               *options),
                           log_path=tmp_path / f"serve_env-{len(started)}.log")
        started.append(server)
        return server.start()

    yield start
    for server in started:
        server.stop()


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}
