"""Who the current request is: the name of the bearer token it came with. Set by the guard
(serving/asgi.py) for the request's task, read by the environment in that task, since openenv
builds a session's environment without the connection."""
from __future__ import annotations

import contextvars

TOKEN: contextvars.ContextVar[str | None] = contextvars.ContextVar("serving_token", default=None)


def current_token() -> str | None:
    return TOKEN.get()
