"""A local stand-in for the Hugging Face Hub's HTTP API, for tests that push without a network.

huggingface_hub talks to it as to the Hub (point `HfApi(endpoint=...)` or `HF_ENDPOINT` at
`url`): it answers the calls that `create_repo` and `upload_folder` make — create the repo,
validate a card's YAML, the preupload check (every file a plain git blob, so no LFS or Xet
transfer is needed) and the commit — and records each repo and commit as it arrived.
"""
from __future__ import annotations

import base64
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Commit:
    repo_id: str
    revision: str
    summary: str
    files: dict[str, bytes]


@dataclass
class HubServer:
    url: str = ""
    repos: dict[str, dict] = field(default_factory=dict)  # repo id -> what create_repo sent
    commits: list[Commit] = field(default_factory=list)
    requests: list[tuple[str, str]] = field(default_factory=list)  # (method, path) in order


def _handler(hub: HubServer):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet test output
            pass

        def _answer(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):  # noqa: N802 - http.server's name
            path = self.path.split("?")[0]
            hub.requests.append(("POST", path))
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if not self.headers.get("Authorization", "").startswith("Bearer "):
                return self._answer(401, {"error": "Invalid credentials in Authorization header"})
            if path == "/api/repos/create":
                sent = json.loads(body)
                repo_id = f"{sent['organization']}/{sent['name']}" if sent.get("organization") else sent["name"]
                hub.repos[repo_id] = sent
                return self._answer(200, {"url": f"{hub.url}/{repo_id}", "name": repo_id, "id": f"repo-{len(hub.repos)}"})
            if path == "/api/validate-yaml":
                return self._answer(200, {"errors": [], "warnings": []})
            parts = path.strip("/").split("/")  # api/models/OWNER/NAME/(preupload|commit)/REVISION
            if len(parts) == 6 and parts[:2] == ["api", "models"] and parts[4] in ("preupload", "commit"):
                repo_id, revision = f"{parts[2]}/{parts[3]}", parts[5]
                if repo_id not in hub.repos:
                    return self._answer(404, {"error": "Repository not found"})
                if parts[4] == "preupload":
                    files = json.loads(body)["files"]
                    return self._answer(200, {"files": [
                        {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in files
                    ]})
                return self._commit(repo_id, revision, body)
            return self._answer(404, {"error": f"no such endpoint: {path}"})

        def _commit(self, repo_id: str, revision: str, body: bytes) -> None:
            summary, files = "", {}
            for line in body.splitlines():
                item = json.loads(line)
                if item["key"] == "header":
                    summary = item["value"]["summary"]
                elif item["key"] == "file":
                    files[item["value"]["path"]] = base64.b64decode(item["value"]["content"])
            hub.commits.append(Commit(repo_id=repo_id, revision=revision, summary=summary, files=files))
            oid = f"{len(hub.commits):040x}"
            self._answer(200, {"commitUrl": f"{hub.url}/{repo_id}/commit/{oid}", "commitOid": oid,
                               "pullRequestUrl": None})

    return Handler


class running_hub_server:  # noqa: N801 - used as a context manager, like open()
    """`with running_hub_server() as hub:` a HubServer listening on 127.0.0.1 until the block ends."""

    def __enter__(self) -> HubServer:
        self.hub = HubServer()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self.hub))
        self.hub.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self.hub

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
