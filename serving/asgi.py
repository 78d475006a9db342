"""The OpenEnv server's guard, around openenv's own FastAPI app (`create_fastapi_app`).

openenv serves the protocol (`/health`, `/schema`, `/metadata`, the `/ws` session); this ASGI
middleware adds what a studio serving strangers needs:

- **A bearer token** on every request but `/health`: `Authorization: Bearer <token>`, which
  openenv's clients send with `headers=`. Without a valid one a WebSocket is closed before it is
  accepted (the client sees HTTP 403) and an HTTP request gets 401: no session is made, no
  episode played, no worker touched. The token's name reaches the environment through a context
  variable, since openenv builds the session's environment without the connection.
- **A client that goes away mid-step** cancels the step: openenv reads the socket only between
  messages, so the middleware reads it all the time, and on a disconnect during a step it
  cancels the session's task; the environment then revokes the step's renders and stores
  nothing, and openenv ends the session.
- **Idle sessions are closed** after PAINTAPP_ENV_IDLE_S without a message (a running step is
  not idle), freeing their slot; openenv's client opens a new socket on its next call.
"""
from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from django.db import close_old_connections
from openenv.core.env_server import ConcurrencyConfig, create_fastapi_app

from serving.context import TOKEN
from serving.environment import PaintingAction, PaintingObservation, PaintingState, Served, StudioEnvironment
from serving.selectors import token_name_for

log = logging.getLogger(__name__)

OPEN_PATHS = frozenset({"/health"})
IDLE_CLOSE_CODE = 1001  # going away
POLICY_CLOSE_CODE = 1008  # policy violation: no valid token


def bearer(scope: dict) -> str | None:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            kind, _, secret = value.decode("latin-1").partition(" ")
            return secret.strip() if kind.lower() == "bearer" else None
    return None


class EnvGuard:
    def __init__(self, app, *, token_name_for: Callable[[str | None], str | None], idle_s: float):
        self.app = app
        self.token_name_for = token_name_for
        self.idle_s = idle_s

    async def __call__(self, scope: dict, receive, send) -> None:
        if scope["type"] not in ("http", "websocket") or (scope["type"] == "http" and scope["path"] in OPEN_PATHS):
            await self.app(scope, receive, send)
            return
        name = await asyncio.to_thread(self._lookup, bearer(scope))
        if name is None:
            await self._refuse(scope, receive, send)
            return
        TOKEN.set(name)
        if scope["type"] == "http":
            await self.app(scope, receive, send)
        else:
            await Connection(self.app, scope, receive, send, idle_s=self.idle_s).serve()

    def _lookup(self, secret: str | None) -> str | None:
        close_old_connections()
        try:
            return self.token_name_for(secret)
        finally:
            close_old_connections()

    @staticmethod
    async def _refuse(scope: dict, receive, send) -> None:
        reason = "a valid bearer token is required (Authorization: Bearer <token>)"
        if scope["type"] == "websocket":
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": POLICY_CLOSE_CODE, "reason": reason})
            return
        body = json.dumps({"detail": reason}).encode()
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
        await send({"type": "http.response.body", "body": body})


class Connection:
    """One WebSocket between the client and openenv's handler, read by a pump of ours."""

    def __init__(self, app, scope, receive, send, *, idle_s: float):
        self.app, self.scope, self.receive, self.send = app, scope, receive, send
        self.idle_s = idle_s
        self.inbox: asyncio.Queue[dict] = asyncio.Queue()
        self.waiting = False  # the handler is waiting for the client's next message
        self.last = time.monotonic()
        self.closed = False
        self.task: asyncio.Task | None = None
        self.cancelled = False

    async def serve(self) -> None:
        self.task = asyncio.create_task(self.app(self.scope, self._app_receive, self._app_send))
        pump = asyncio.create_task(self._pump())
        watch = asyncio.create_task(self._watch_idle())
        try:
            await self.task
        except asyncio.CancelledError:
            if not self.cancelled:
                raise
        finally:
            pump.cancel()
            watch.cancel()

    async def _app_receive(self) -> dict:
        self.waiting = True
        try:
            return await self.inbox.get()
        finally:
            self.waiting = False
            self.last = time.monotonic()

    async def _app_send(self, message: dict) -> None:
        self.last = time.monotonic()
        if self.closed:
            if message["type"] == "websocket.close":
                return
            raise RuntimeError("the connection is closed")
        if message["type"] == "websocket.close":
            self.closed = True
        await self.send(message)

    async def _pump(self) -> None:
        while True:
            message = await self.receive()
            await self.inbox.put(message)
            if message["type"] == "websocket.disconnect":
                self.closed = True
                if not self.waiting and self.task is not None and not self.task.done():
                    log.info("client left mid-step: cancelling its step")
                    self.cancelled = True
                    self.task.cancel()
                return

    async def _watch_idle(self) -> None:
        while True:
            await asyncio.sleep(min(self.idle_s / 4, 1.0))
            if self.waiting and not self.closed and time.monotonic() - self.last > self.idle_s:
                log.info("closing a session idle for more than %.0f s", self.idle_s)
                self.closed = True
                try:
                    await self.send({"type": "websocket.close", "code": IDLE_CLOSE_CODE, "reason": "idle"})
                except Exception:  # noqa: BLE001 - the socket is already gone
                    pass
                await self.inbox.put({"type": "websocket.disconnect", "code": IDLE_CLOSE_CODE})
                return


def build_app(served: Served, *, idle_s: float, max_sessions: int) -> EnvGuard:
    """openenv's FastAPI app serving `served`, behind EnvGuard. Steps wait on the workers in a
    pool with a thread for every session (asyncio's default pool has cpu + 4, which would queue a
    GRPO group of 8 on a small box); each thread keeps a database connection."""
    threads = ThreadPoolExecutor(max_workers=max_sessions, thread_name_prefix="episode")
    app = create_fastapi_app(
        lambda: StudioEnvironment(served, threads), PaintingAction, PaintingObservation,
        concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions),
        env_name="paint-with-code-studio", state_cls=PaintingState, mode="production",
    )
    return EnvGuard(app, token_name_for=token_name_for, idle_s=idle_s)
