"""A real local HTTP server that speaks OpenAI chat-completions like a VLM judge would.

Used by the VLM judge tests instead of patching: the judge talks real HTTP/1.1 (keep-alive
included) to 127.0.0.1 on an ephemeral port.

    with FakeVLMServer() as server:
        server.ok("A", "softer edges")   # queue: next request answers A
        server.drop()                    # then: close the socket without answering
        GET /v1/models lists `served_models` (the recipe probe's question)
        ...                              # queue empty: the default "judge" mode decides

Behaviours are consumed one per request, in order. With the queue empty the server judges
for real: the image with more non-white pixels wins, so swapping A/B swaps the verdict.
Every request is recorded (parsed JSON body, headers, connection number) for assertions.
"""
from __future__ import annotations

import base64
import io
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
from PIL import Image

from paintenv.judges.vlm import DEFAULT_MODEL


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]  # lower-case names
    body: Any  # parsed JSON, or the raw text if it was not JSON
    connection: int  # which TCP connection carried it (1, 2, ...)

    @property
    def images(self) -> list[str]:
        """The image_url URLs of the user message, in presentation order."""
        urls = []
        for message in self.body.get("messages", []):
            if isinstance(message.get("content"), list):
                urls += [p["image_url"]["url"] for p in message["content"] if p.get("type") == "image_url"]
        return urls

    @property
    def text(self) -> str:
        parts = []
        for message in self.body.get("messages", []):
            content = message.get("content")
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                parts += [p.get("text", "") for p in content if p.get("type") == "text"]
        return "\n".join(parts)

    @property
    def structured_mode(self) -> str:
        """Which structured-output form the client asked for."""
        if "guided_json" in self.body:
            return "guided_json"
        response_format = self.body.get("response_format")
        if isinstance(response_format, dict):
            return str(response_format.get("type"))
        return "none"


@dataclass
class Behaviour:
    kind: str  # answer | slow | error | drop | close_after
    content: str | None = None  # for answer / close_after; None: judge the images
    status: int = 200
    retry_after: str | None = None
    seconds: float = 0.0


def data_uri_to_array(uri: str) -> np.ndarray:
    _, _, payload = uri.partition("base64,")
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(payload))).convert("RGB"))


def paint_amount(uri: str) -> int:
    """Non-white pixels: the fake judge's whole sense of taste."""
    return int((data_uri_to_array(uri) < 240).any(axis=2).sum())


def verdict_json(winner: str, reason: str) -> str:
    return json.dumps({"winner": winner, "reason": reason})


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like vLLM/uvicorn
    server: _Server

    def setup(self) -> None:
        super().setup()
        # Headers and body go out as separate writes; without this Nagle + delayed ACK add 40 ms a call.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.connection_number = self.server.owner._next_connection()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # quiet test output

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        """GET /v1/models: the OpenAI model list (what the recipe probe asks)."""
        owner = self.server.owner
        owner._record(RecordedRequest(self.path, {k.lower(): v for k, v in self.headers.items()}, None,
                                      self.connection_number))
        if self.path.rstrip("/") != "/v1/models":
            return self._send(404, {"error": {"message": f"no route {self.path}"}})
        if owner.api_key and self.headers.get("Authorization") != f"Bearer {owner.api_key}":
            return self._send(401, {"error": {"message": "invalid api key"}})
        self._send(200, {"object": "list", "data": [
            {"id": name, "object": "model", "created": 0, "owned_by": "fake"} for name in owner.served_models
        ]})

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        owner = self.server.owner
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        request = RecordedRequest(
            self.path, {k.lower(): v for k, v in self.headers.items()}, body, self.connection_number
        )
        owner._record(request)
        if self.path.rstrip("/") != "/v1/chat/completions":
            return self._send(404, {"error": {"message": f"no route {self.path}"}})
        if not isinstance(body, dict):
            return self._send(400, {"error": {"message": "body is not JSON"}})
        if request.structured_mode in owner.reject_modes:  # like a server without that feature
            return self._send(400, {"error": {"message": f"unsupported structured output {request.structured_mode}"}})

        behaviour = owner._next_behaviour()
        if behaviour.kind == "drop":
            self.close_connection = True  # no response at all: the client sees the socket close
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if behaviour.kind == "error":
            headers = {"Retry-After": behaviour.retry_after} if behaviour.retry_after is not None else {}
            return self._send(behaviour.status, {"error": {"message": f"fake error {behaviour.status}"}}, headers)
        if behaviour.kind == "slow":
            if owner._stopping.wait(behaviour.seconds):
                return
        content = behaviour.content if behaviour.content is not None else owner.judge(request)
        self._send(200, owner.completion(body, content))
        if behaviour.kind == "close_after":  # answered, then the server hangs up (idle close)
            self.close_connection = True

    def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:  # the client gave up (timeout) and closed its end
            self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: FakeVLMServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that time out and hang up are part of the tests


@dataclass
class FakeVLMServer:
    reject_modes: set[str] = field(default_factory=set)  # structured-output forms answered with 400
    served_models: list[str] = field(default_factory=lambda: [DEFAULT_MODEL])  # what GET /v1/models lists
    api_key: str | None = None  # when set, GET /v1/models wants it as the bearer token
    requests: list[RecordedRequest] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._queue: deque[Behaviour] = deque()
        self._lock = threading.Lock()
        self._connections = 0
        self._stopping = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> FakeVLMServer:
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes slow handlers
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeVLMServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- programming the behaviour queue --------------------------------------------------------

    def _push(self, behaviour: Behaviour, times: int) -> FakeVLMServer:
        with self._lock:
            self._queue.extend([behaviour] * times)
        return self

    def answer(self, content: str, times: int = 1) -> FakeVLMServer:
        """Reply with exactly this assistant content."""
        return self._push(Behaviour("answer", content=content), times)

    def ok(self, winner: str = "A", reason: str = "softer edges", times: int = 1) -> FakeVLMServer:
        return self.answer(verdict_json(winner, reason), times)

    def fenced(self, winner: str = "A", reason: str = "softer edges") -> FakeVLMServer:
        return self.answer(f"Here is my verdict:\n```json\n{verdict_json(winner, reason)}\n```\n")

    def think(self, winner: str = "A", reason: str = "softer edges") -> FakeVLMServer:
        return self.answer(
            "<think>Painting A has hard edges; Painting B bleeds. Or is it the other way round? "
            '{"winner": "maybe"}</think>\n' + verdict_json(winner, reason)
        )

    def prose(self, winner: str = "A", reason: str = "softer edges") -> FakeVLMServer:
        return self.answer(verdict_json(winner, reason) + "\n\nI hope this helps! Both paintings have merit.")

    def malformed(self, content: str = "Both paintings are lovely in their own way.", times: int = 1) -> FakeVLMServer:
        return self.answer(content, times)

    def slow(self, seconds: float, times: int = 1) -> FakeVLMServer:
        """Sleep before answering (in judge mode), long enough to trip the client's timeout."""
        return self._push(Behaviour("slow", seconds=seconds), times)

    def error(self, status: int, retry_after: float | str | None = None, times: int = 1) -> FakeVLMServer:
        value = None if retry_after is None else str(retry_after)
        return self._push(Behaviour("error", status=status, retry_after=value), times)

    def drop(self, times: int = 1) -> FakeVLMServer:
        """Read the request, then close the socket without any response."""
        return self._push(Behaviour("drop"), times)

    def close_after(self, winner: str | None = None) -> FakeVLMServer:
        """Answer normally (keep-alive headers and all), then close the connection."""
        content = verdict_json(winner, "softer edges") if winner else None
        return self._push(Behaviour("close_after", content=content), 1)

    def reject_schema(self, *modes: str) -> FakeVLMServer:
        """Answer 400 to json_schema requests (and to any other forms named)."""
        self.reject_modes |= {"json_schema", *modes}
        return self

    # -- internals ------------------------------------------------------------------------

    def _next_connection(self) -> int:
        with self._lock:
            self._connections += 1
            return self._connections

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _next_behaviour(self) -> Behaviour:
        with self._lock:
            return self._queue.popleft() if self._queue else Behaviour("answer")

    def judge(self, request: RecordedRequest) -> str:
        """Default mode: the painting with more paint wins (deterministic, order-aware)."""
        images = request.images
        if len(images) != 2:
            return "I need exactly two paintings."
        a, b = (paint_amount(uri) for uri in images)
        winner = "A" if a >= b else "B"
        return verdict_json(winner, f"Painting {winner} covers more of the paper ({a} vs {b} painted pixels).")

    def completion(self, body: dict[str, Any], content: str) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-fake-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }


def serve(**kwargs: Any) -> Iterator[FakeVLMServer]:
    """Generator for a pytest fixture: `yield from serve()`."""
    with FakeVLMServer(**kwargs) as server:
        yield server
