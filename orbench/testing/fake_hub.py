"""A fake Hugging Face Hub file server for tests: point ``HF_ENDPOINT`` at it.

It answers what ``huggingface_hub.hf_hub_download`` asks, on 127.0.0.1 only:

* ``HEAD`` and ``GET /{datasets/|spaces/|}OWNER/NAME/resolve/REVISION/PATH``: 200 with
  ``X-Repo-Commit`` (the commit the revision points to), ``ETag`` and ``Content-Length``,
  the Hub's headers that the client needs to file the download in its cache;
* with ``lfs=True`` the file is served as the Hub serves large files: a 302 whose
  ``Location`` is on another host (``localhost`` instead of ``127.0.0.1``, so the client
  does not follow it on HEAD), carrying ``X-Linked-Etag`` and ``X-Linked-Size``, then the
  bytes from ``/cdn/SHA256``;
* the Hub's error replies, told apart by ``X-Error-Code``: an unknown repo is a 401
  ``RepoNotFound`` (as the Hub answers without a token), an unknown revision a 404
  ``RevisionNotFound``, an unknown file a 404 ``EntryNotFound``.

Every request is recorded (``server.requests``), so a test can assert that a read from the
cache made none. Use it as a context manager: ``with FakeHub() as hub: hub.add_commit(...)``.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Mapping
from urllib.parse import unquote, urlsplit

HOST = "127.0.0.1"
_TYPE_PREFIX = {"dataset": "datasets/", "space": "spaces/", "model": ""}


@dataclass(frozen=True)
class Hit:
    method: str
    path: str
    status: int
    authorization: str | None  # the Authorization header sent (HF_TOKEN reaches the server as a bearer token)


class _Repo:
    def __init__(self) -> None:
        self.commits: dict[str, dict[str, bytes]] = {}
        self.refs: dict[str, str] = {}


class FakeHub:
    """Repos of files at commits, served over HTTP as the Hub's ``resolve`` endpoint serves them."""

    def __init__(self, *, lfs: bool = False) -> None:
        self.lfs = lfs
        self._repos: dict[tuple[str, str], _Repo] = {}
        self._blobs: dict[str, bytes] = {}  # sha256 -> bytes, for /cdn/
        self._lock = threading.Lock()
        self._hits: list[Hit] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ content

    def add_commit(self, repo_id: str, files: Mapping[str, bytes | str], *, repo_type: str = "dataset",
                   branch: str = "main") -> str:
        """A new commit on ``branch`` holding the branch's files plus ``files``; returns its sha."""
        with self._lock:
            repo = self._repos.setdefault((repo_type, repo_id), _Repo())
            parent = repo.refs.get(branch)
            tree = dict(repo.commits.get(parent, {})) if parent else {}
            tree.update({k: v.encode("utf-8") if isinstance(v, str) else bytes(v) for k, v in files.items()})
            digest = hashlib.sha1(repr((repo_id, parent, sorted(tree.items()))).encode("utf-8")).hexdigest()
            repo.commits[digest] = tree
            repo.refs[branch] = digest
            for data in tree.values():
                self._blobs[hashlib.sha256(data).hexdigest()] = data
            return digest

    def tag(self, repo_id: str, name: str, commit: str, *, repo_type: str = "dataset") -> None:
        with self._lock:
            self._repos[(repo_type, repo_id)].refs[name] = commit

    # ------------------------------------------------------------------ what was asked

    @property
    def requests(self) -> list[Hit]:
        with self._lock:
            return list(self._hits)

    def file_requests(self) -> list[Hit]:
        """Requests for repo files and blobs (not the client's other look-ups, e.g. under /api/)."""
        return [h for h in self.requests if "/resolve/" in h.path or h.path.startswith("/cdn/")]

    def _record(self, hit: Hit) -> None:
        with self._lock:
            self._hits.append(hit)

    # ------------------------------------------------------------------ serving

    @property
    def port(self) -> int:
        assert self._server is not None, "not started"
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        """The value for HF_ENDPOINT."""
        return f"http://{HOST}:{self.port}"

    def start(self) -> "FakeHub":
        hub = self

        class Handler(_Handler):
            owner = hub

        self._server = ThreadingHTTPServer((HOST, 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-hub", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(timeout=5)  # type: ignore[union-attr]
            self._server = None

    def __enter__(self) -> "FakeHub":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ routing

    def answer(self, path: str) -> tuple[int, dict[str, str], bytes]:
        """(status, headers, body) for a request path; the body is dropped for HEAD."""
        parts = [unquote(p) for p in urlsplit(path).path.split("/")[1:]]
        if len(parts) == 2 and parts[0] == "cdn":
            with self._lock:
                data = self._blobs.get(parts[1])
            if data is None:
                return 404, {}, b"no such blob"
            return 200, {"ETag": f'"{parts[1]}"'}, data
        repo_type = {"datasets": "dataset", "spaces": "space"}.get(parts[0] if parts else "", "model")
        if repo_type != "model":
            parts = parts[1:]
        if len(parts) < 5 or parts[2] != "resolve":
            return 404, {}, b"not a resolve path"
        repo_id, revision, filename = f"{parts[0]}/{parts[1]}", parts[3], "/".join(parts[4:])
        with self._lock:
            repo = self._repos.get((repo_type, repo_id))
            if repo is None:
                return 401, _error("RepoNotFound", "Repository not found"), b"Repository not found"
            commit = revision if revision in repo.commits else repo.refs.get(revision)
            if commit is None:
                return 404, _error("RevisionNotFound", "Invalid rev id"), b"Invalid rev id"
            data = repo.commits[commit].get(filename)
        if data is None:
            return 404, {**_error("EntryNotFound", "Entry not found"), "X-Repo-Commit": commit}, b"Entry not found"
        sha256 = hashlib.sha256(data).hexdigest()
        if self.lfs:
            location = f"http://localhost:{self.port}/cdn/{sha256}"
            return 302, {"Location": location, "X-Repo-Commit": commit, "X-Linked-Etag": f'"{sha256}"',
                         "X-Linked-Size": str(len(data))}, b""
        git_sha = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # a git blob id, as the Hub's ETag
        return 200, {"X-Repo-Commit": commit, "ETag": f'"{git_sha}"'}, data


def _error(code: str, message: str) -> dict[str, str]:
    return {"X-Error-Code": code, "X-Error-Message": message}


class _Handler(BaseHTTPRequestHandler):
    owner: FakeHub
    protocol_version = "HTTP/1.1"  # keep-alive, as the client pools connections

    def do_HEAD(self) -> None:  # noqa: N802 (http.server's naming)
        self._reply(head=True)

    def do_GET(self) -> None:  # noqa: N802
        self._reply(head=False)

    def _reply(self, head: bool) -> None:
        status, headers, body = self.owner.answer(self.path)
        self.owner._record(Hit(self.command, self.path, status, self.headers.get("Authorization")))
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # keep test output clean
        pass
