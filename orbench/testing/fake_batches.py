"""The Batch API of the fake OpenAI server: ``/v1/files`` and ``/v1/batches``.

Enough of OpenAI's protocol for the openai SDK's ``files.create / content / retrieve`` and
``batches.create / retrieve / cancel / list``. Each batch follows a scripted lifecycle, one
step per ``retrieve``:

- ``complete`` (the default): validating -> in_progress -> finalizing -> completed;
- ``fail``: validating -> failed, with validation ``errors`` and no output;
- ``expire``: validating -> in_progress -> expired, with the first half of the results;
- a cancel moves any unfinished batch to cancelling, then cancelled, with the first half.

Each line of an input file is answered by the server's own chat logic (responder,
``fail_when_contains``...); a line that gets an HTTP error goes to the batch's error file.
``polls_per_state`` holds each state for that many retrieves (a test can hold a batch in
``in_progress`` and kill the client); ``retrieve_faults`` makes the next retrieves fail with
the given statuses; ``create_status`` / ``upload_status`` make every create / upload fail.
"""

from __future__ import annotations

import collections
import itertools
import json
import time
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any, Awaitable, Callable, Deque, Dict, List, Optional

from .fake_http import Outcome, Request, status_outcome

# Answers one chat-completions body as the server would answer it over HTTP.
ChatHandler = Callable[[Any], Awaitable[Outcome]]

SCENARIOS = ("complete", "fail", "expire")
TERMINAL = ("completed", "failed", "expired", "cancelled")


class FakeBatchAPI:
    def __init__(self, chat: ChatHandler) -> None:
        self.chat = chat
        self.files: Dict[str, Dict[str, Any]] = {}
        self.batches: Dict[str, Dict[str, Any]] = {}
        self.scenarios: Deque[str] = collections.deque()  # one per created batch, then "complete"
        self.polls_per_state = 1
        self.retrieve_faults: Deque[int] = collections.deque()
        self.create_status: Optional[int] = None
        self.upload_status: Optional[int] = None
        self._ids = itertools.count(1)
        self._polls: Dict[str, int] = collections.Counter()

    # ---- scripting ------------------------------------------------------------------

    def script(self, *scenarios: str) -> None:
        for s in scenarios:
            if s not in SCENARIOS:
                raise ValueError(f"unknown batch scenario {s!r}; choose from {SCENARIOS}")
        self.scenarios.extend(scenarios)

    def created(self) -> List[Dict[str, Any]]:
        """Every batch created so far, oldest first."""
        return list(self.batches.values())

    # ---- HTTP -------------------------------------------------------------------------

    async def handle(self, request: Request, body: Any) -> Outcome:
        parts = [p for p in request.path.split("/") if p][1:]  # drop "v1"
        method = request.method
        try:
            if parts == ["files"] and method == "POST":
                return self._upload(request)
            if len(parts) == 2 and parts[0] == "files" and method == "GET":
                return self._json(self._file_obj(self._file(parts[1])))
            if len(parts) == 3 and parts[0] == "files" and parts[2] == "content" and method == "GET":
                f = self._file(parts[1])
                return self._out(200, f["content"], "application/octet-stream")
            if parts == ["batches"] and method == "POST":
                return await self._create(body)
            if parts == ["batches"] and method == "GET":
                return self._json({"object": "list", "data": [self._public(b) for b in reversed(self.created())],
                                   "has_more": False})
            if len(parts) == 2 and parts[0] == "batches" and method == "GET":
                return await self._retrieve(parts[1])
            if len(parts) == 3 and parts[0] == "batches" and parts[2] == "cancel" and method == "POST":
                return self._cancel(parts[1])
        except KeyError as err:
            return self._error(404, f"No such object: {err.args[0]}")
        return self._error(404, f"Unknown request URL: {method} {request.path}.")

    # ---- files --------------------------------------------------------------------------

    def _upload(self, request: Request) -> Outcome:
        if self.upload_status is not None:
            return self._error(self.upload_status, "upload refused (scripted)")
        ctype = request.headers.get("content-type", "")
        msg = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + request.raw_body)
        fields: Dict[str, Any] = {}
        filename = "upload.jsonl"
        for part in msg.iter_parts():
            name = part.get_param("name", header="content-disposition")
            if name == "file":
                filename = part.get_filename() or filename
            fields[name] = part.get_payload(decode=True)
        if "file" not in fields:
            return self._error(400, "'file' is a required field")
        purpose = (fields.get("purpose") or b"").decode()
        fid = self._new_file(fields["file"], filename, purpose)
        return self._json(self._file_obj(self.files[fid]))

    def _new_file(self, content: bytes, filename: str, purpose: str) -> str:
        fid = f"file-fake{next(self._ids):06d}"
        self.files[fid] = {"id": fid, "content": content, "filename": filename, "purpose": purpose,
                           "created_at": int(time.time())}
        return fid

    def _file(self, fid: str) -> Dict[str, Any]:
        if fid not in self.files:
            raise KeyError(fid)
        return self.files[fid]

    @staticmethod
    def _file_obj(f: Dict[str, Any]) -> Dict[str, Any]:
        return {"id": f["id"], "object": "file", "bytes": len(f["content"]), "created_at": f["created_at"],
                "filename": f["filename"], "purpose": f["purpose"], "status": "processed"}

    # ---- batches ------------------------------------------------------------------------

    async def _create(self, body: Any) -> Outcome:
        if self.create_status is not None:
            return self._error(self.create_status, "batch creation refused (scripted)")
        if not isinstance(body, dict) or not isinstance(body.get("input_file_id"), str):
            return self._error(400, "'input_file_id' is a required property")
        f = self._file(body["input_file_id"])
        lines = [ln for ln in f["content"].decode("utf-8").splitlines() if ln.strip()]
        bid = f"batch_fake{next(self._ids):06d}"
        scenario = self.scenarios.popleft() if self.scenarios else "complete"
        self.batches[bid] = {
            "id": bid, "object": "batch", "endpoint": body.get("endpoint"), "errors": None,
            "input_file_id": f["id"], "completion_window": body.get("completion_window", "24h"),
            "status": "validating", "output_file_id": None, "error_file_id": None,
            "created_at": int(time.time()), "metadata": body.get("metadata"),
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
            "_scenario": scenario, "_lines": lines, "_results": None,
        }
        return self._json(self._public(self.batches[bid]))

    async def _retrieve(self, bid: str) -> Outcome:
        if self.retrieve_faults:
            return self._error(self.retrieve_faults.popleft(), "poll failed (scripted)")
        b = self.batches[bid]  # KeyError: a 404, in handle()
        self._polls[bid] += 1
        if b["status"] not in TERMINAL and self._polls[bid] >= self.polls_per_state:
            self._polls[bid] = 0
            await self._advance(b)
        return self._json(self._public(b))

    def _cancel(self, bid: str) -> Outcome:
        b = self.batches[bid]
        if b["status"] in TERMINAL:
            return self._error(400, f"Cannot cancel a batch with status {b['status']}.")
        b["status"] = "cancelling"
        return self._json(self._public(b))

    async def _advance(self, b: Dict[str, Any]) -> None:
        status, scenario = b["status"], b["_scenario"]
        if status == "validating":
            if scenario == "fail":
                b["status"] = "failed"
                b["errors"] = {"object": "list", "data": [
                    {"code": "invalid_request", "message": "Model 'fake-model' is not available for batch (scripted).",
                     "param": "body.model", "line": 1}]}
                b["request_counts"]["failed"] = 0
                return
            b["status"] = "in_progress"
            await self._run(b)
            return
        if status == "in_progress":
            if scenario == "expire":
                self._finish(b, "expired", half=True)
            else:
                b["status"] = "finalizing"
            return
        if status == "finalizing":
            self._finish(b, "completed", half=False)
        elif status == "cancelling":
            if b["_results"] is None:
                await self._run(b)
            self._finish(b, "cancelled", half=True)

    async def _run(self, b: Dict[str, Any]) -> None:
        """Answer every line now; the counts move as the lifecycle does."""
        results = []
        for n, line in enumerate(b["_lines"]):
            try:
                req = json.loads(line)
            except ValueError:
                results.append({"custom_id": f"line-{n + 1}", "status": 400,
                                "body": {"error": {"message": "invalid JSON line"}}})
                continue
            outcome = await self.chat(req.get("body"))
            try:
                body = json.loads(outcome.body) if outcome.status is not None else None
            except ValueError:
                body = None
            status = outcome.status if body is not None else 500
            if body is None:
                body = {"error": {"message": "the model's reply could not be read", "type": "server_error"}}
            results.append({"custom_id": req.get("custom_id"), "status": status, "body": body})
        b["_results"] = results
        done = sum(r["status"] == 200 for r in results)
        b["request_counts"].update(completed=done // 2, failed=(len(results) - done) // 2)

    def _finish(self, b: Dict[str, Any], status: str, half: bool) -> None:
        results = b["_results"] or []
        if half:
            results = results[: len(results) // 2]
        ok = [r for r in results if r["status"] == 200]
        bad = [r for r in results if r["status"] != 200]
        if ok:
            b["output_file_id"] = self._new_file(self._lines_of(ok, b["id"]), "batch_output.jsonl", "batch_output")
        if bad:
            b["error_file_id"] = self._new_file(self._lines_of(bad, b["id"]), "batch_errors.jsonl", "batch_output")
        b["request_counts"].update(completed=len(ok), failed=len(bad))
        b["status"] = status

    @staticmethod
    def _lines_of(results: List[Dict[str, Any]], bid: str) -> bytes:
        out = []
        for i, r in enumerate(results):
            out.append(json.dumps({"id": f"{bid}_req{i:06d}", "custom_id": r["custom_id"],
                                   "response": {"status_code": r["status"], "request_id": f"req_{bid}_{i}",
                                                "body": r["body"]},
                                   "error": None}))
        return ("\n".join(out) + "\n").encode("utf-8")

    @staticmethod
    def _public(b: Dict[str, Any]) -> Dict[str, Any]:
        return {k: (dict(v) if isinstance(v, dict) else v) for k, v in b.items() if not k.startswith("_")}

    # ---- replies ------------------------------------------------------------------------

    def _json(self, obj: Any) -> Outcome:
        return self._out(200, json.dumps(obj).encode(), "application/json")

    @staticmethod
    def _error(code: int, message: str) -> Outcome:
        return status_outcome(code, "batch_api", message)

    @staticmethod
    def _out(status: int, body: bytes, ctype: str) -> Outcome:
        return Outcome(status, "batch_api", "route", body=body, content_type=ctype)
