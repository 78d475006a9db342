"""A real local HTTP server that answers the Hugging Face Hub's file API.

huggingface_hub talks to it through HF_ENDPOINT (or `endpoint=`) exactly as it talks to the Hub,
which cannot be reached here:

    with LocalHub() as hub:
        commit = hub.publish("studio/tiny", folder)          # a commit of folder's files on main
        hub.publish("studio/tiny", other_folder, tag="v1")   # a second commit, tagged v1
        ...  HF_ENDPOINT=hub.endpoint ...
        hub.requests                                          # [("GET", "/api/models/..."), ...]

It serves what snapshot_download and hf_hub_download ask for, as the Hub answers them (plain
HTTP downloads, no Xet):
    GET       /api/models/OWNER/NAME[/revision/REV]       repository info: the commit sha, the files
    GET       /api/models/OWNER/NAME/tree/REV?recursive=…  the file listing (one page)
    HEAD/GET  /OWNER/NAME/resolve/REV/PATH                 a file's commit, ETag and size / its bytes
                                                           (with `Range: bytes=N-` to resume)
A missing repository, revision or file is a 404 with the Hub's X-Error-Code (RepoNotFound,
RevisionNotFound, EntryNotFound); the files of a gated repository are a 401 GatedRepo; both are
what make huggingface_hub raise its usual errors.

It also takes what `create_repo` and `upload_folder` send (with a Bearer token):
    POST      /api/repos/create                            recorded in `created` (name, private, ...)
    POST      /api/validate-yaml                           a model card's metadata: accepted
    POST      /api/models/OWNER/NAME/preupload/REV         every file a plain git blob (no LFS or Xet)
    POST      /api/models/OWNER/NAME/commit/REV            recorded in `pushes`; it becomes the
                                                           branch's next commit, downloadable as above
"""
from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

# Files the Hub stores with Git LFS (their listing carries an `lfs` entry), as a model's .gitattributes says.
LFS_SUFFIXES = (".safetensors", ".bin", ".pt", ".gguf")


@dataclass
class _Repo:
    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)  # sha -> {path: bytes}
    refs: dict[str, str] = field(default_factory=dict)  # branch or tag -> sha
    gated: bool = False


@dataclass
class Push:
    """One commit as `upload_folder` sent it."""

    repo_id: str
    revision: str
    summary: str
    files: dict[str, bytes]
    oid: str


class LocalHub:
    def __init__(self, *, bytes_per_second: int | None = None) -> None:
        """`bytes_per_second`: send files no faster than that, like a slow link (None: at once)."""
        self.bytes_per_second = bytes_per_second
        self.repos: dict[str, _Repo] = {}
        self.requests: list[tuple[str, str]] = []
        self.created: dict[str, dict] = {}  # repo id -> what create_repo sent
        self.pushes: list[Push] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def publish(self, repo_id: str, folder: Path, *, tag: str | None = None, gated: bool = False) -> str:
        """Commit every file under `folder` to `repo_id`'s main branch (and `tag`); return the commit sha."""
        files = {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}
        return self._commit(repo_id, files, revision="main", tag=tag, gated=gated)

    def _commit(self, repo_id: str, files: dict[str, bytes], *, revision: str, tag: str | None = None,
                gated: bool | None = None, replace: bool = True) -> str:
        with self._lock:
            repo = self.repos.setdefault(repo_id, _Repo())
            if gated is not None:
                repo.gated = gated
            parent = repo.refs.get(revision, "")
            if not replace and parent:  # a pushed commit adds to the files already there
                files = {**repo.commits[parent], **files}
            digest = hashlib.sha1(parent.encode())
            for path, data in files.items():
                digest.update(path.encode() + b"\0" + hashlib.sha256(data).digest())
            sha = digest.hexdigest()
            repo.commits[sha] = files
            repo.refs[revision] = sha
            if tag:
                repo.refs[tag] = sha
        return sha

    def requests_for(self, method: str, pattern: str) -> list[str]:
        """The paths of the requests so far with this method whose path matches `pattern`."""
        with self._lock:
            return [path for m, path in self.requests if m == method and re.search(pattern, path)]

    def clear_requests(self) -> None:
        with self._lock:
            self.requests.clear()

    def __enter__(self) -> LocalHub:
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="local-hub", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    # --- what the handler asks --------------------------------------------------------------

    def _record(self, method: str, path: str) -> None:
        with self._lock:
            self.requests.append((method, path))

    def _lookup(self, repo_id: str, revision: str) -> tuple[_Repo | None, str | None]:
        with self._lock:
            repo = self.repos.get(repo_id)
            if repo is None:
                return None, None
            sha = revision if revision in repo.commits else repo.refs.get(revision)
            return repo, sha


def _git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _handler_for(hub: LocalHub) -> type[BaseHTTPRequestHandler]:
    api_info = re.compile(r"^/api/models/([^/]+/[^/]+)(?:/revision/([^/]+))?$")
    api_tree = re.compile(r"^/api/models/([^/]+/[^/]+)/tree/([^/]+)$")
    resolve = re.compile(r"^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$")
    api_upload = re.compile(r"^/api/models/([^/]+/[^/]+)/(preupload|commit)/([^/]+)$")

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # quiet: the tests read hub.requests
            pass

        def do_HEAD(self) -> None:
            self._answer(body=False)

        def do_GET(self) -> None:
            self._answer(body=True)

        def do_POST(self) -> None:
            path = urlsplit(self.path).path
            hub._record("POST", path)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if not self.headers.get("Authorization", "").startswith("Bearer "):
                return self._json({"error": "Invalid credentials in Authorization header"}, status=401)
            if path == "/api/repos/create":
                sent = json.loads(body)
                repo_id = f"{sent['organization']}/{sent['name']}" if sent.get("organization") else sent["name"]
                with hub._lock:
                    hub.created[repo_id] = sent
                    hub.repos.setdefault(repo_id, _Repo())
                return self._json({"url": f"{hub.endpoint}/{repo_id}", "name": repo_id, "id": f"repo-{len(hub.created)}"})
            if path == "/api/validate-yaml":
                return self._json({"errors": [], "warnings": []})
            if match := api_upload.match(path):
                repo_id, kind, revision = match.group(1), match.group(2), unquote(match.group(3))
                if repo_id not in hub.repos:
                    return self._error(404, "RepoNotFound")
                if kind == "preupload":
                    files = json.loads(body)["files"]
                    return self._json({"files": [
                        {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in files]})
                return self._push(repo_id, revision, body)
            self._error(404, "")

        def _push(self, repo_id: str, revision: str, body: bytes) -> None:
            summary, files = "", {}
            for line in body.splitlines():  # the commit is NDJSON: a header, then one line per file
                item = json.loads(line)
                if item["key"] == "header":
                    summary = item["value"]["summary"]
                elif item["key"] == "file":
                    files[item["value"]["path"]] = base64.b64decode(item["value"]["content"])
            oid = hub._commit(repo_id, files, revision=revision, replace=False)
            with hub._lock:
                hub.pushes.append(Push(repo_id=repo_id, revision=revision, summary=summary, files=files, oid=oid))
            self._json({"commitUrl": f"{hub.endpoint}/{repo_id}/commit/{oid}", "commitOid": oid, "pullRequestUrl": None})

        def _answer(self, *, body: bool) -> None:
            path = urlsplit(self.path).path
            hub._record(self.command, path)
            if match := api_info.match(path):
                return self._repo_info(match.group(1), unquote(match.group(2) or "main"))
            if match := api_tree.match(path):
                return self._tree(match.group(1), unquote(match.group(2)))
            if match := resolve.match(path):
                return self._file(match.group(1), unquote(match.group(2)), unquote(match.group(3)), body=body)
            self._error(404, "")

        def _find(self, repo_id: str, revision: str) -> tuple[_Repo, str] | None:
            """The repository and the commit `revision` names, or None with the Hub's 404 sent."""
            repo, sha = hub._lookup(repo_id, revision)
            if repo is None:
                self._error(404, "RepoNotFound")
            elif sha is None:
                self._error(404, "RevisionNotFound")
            else:
                return repo, sha
            return None

        def _repo_info(self, repo_id: str, revision: str) -> None:
            if (found := self._find(repo_id, revision)) is None:
                return None
            repo, sha = found
            siblings = [{"rfilename": name} for name in repo.commits[sha]]
            self._json({"id": repo_id, "modelId": repo_id, "sha": sha, "private": False,
                        "gated": "auto" if repo.gated else False, "siblings": siblings, "tags": []})

        def _tree(self, repo_id: str, revision: str) -> None:
            if (found := self._find(repo_id, revision)) is None:
                return None
            repo, sha = found
            entries = []
            for name, data in repo.commits[sha].items():
                entry = {"type": "file", "path": name, "size": len(data), "oid": _git_blob_id(data)}
                if name.endswith(LFS_SUFFIXES):
                    entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
                entries.append(entry)
            self._json(entries)

        def _file(self, repo_id: str, revision: str, name: str, *, body: bool) -> None:
            if (found := self._find(repo_id, revision)) is None:
                return None
            repo, sha = found
            if repo.gated:
                return self._error(401, "GatedRepo", commit=sha)
            data = repo.commits[sha].get(name)
            if data is None:
                return self._error(404, "EntryNotFound", commit=sha)
            start = 0
            if body and (wanted := re.match(r"bytes=(\d+)-$", self.headers.get("Range", ""))):
                start = int(wanted.group(1))
            self.send_response(206 if start else 200)
            self.send_header("X-Repo-Commit", sha)
            etag = hashlib.sha256(data).hexdigest() if name.endswith(LFS_SUFFIXES) else _git_blob_id(data)
            self.send_header("ETag", f'"{etag}"')
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Type", "application/octet-stream")
            if start:
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            self.send_header("Content-Length", str(len(data) - start))
            self.end_headers()
            if body:
                self._send(data[start:])

        def _send(self, data: bytes) -> None:
            if not hub.bytes_per_second:
                self.wfile.write(data)
                return
            piece = max(1, hub.bytes_per_second // 20)  # 20 pieces a second
            for offset in range(0, len(data), piece):
                self.wfile.write(data[offset:offset + piece])
                time.sleep(len(data[offset:offset + piece]) / hub.bytes_per_second)

        def _json(self, payload, *, status: int = 200) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        def _error(self, status: int, code: str, *, commit: str | None = None) -> None:
            data = json.dumps({"error": code or "Not Found"}).encode()
            self.send_response(status)
            if code:
                self.send_header("X-Error-Code", code)
            if commit:
                self.send_header("X-Repo-Commit", commit)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

    return Handler
