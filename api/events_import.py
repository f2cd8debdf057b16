"""`POST /api/v1/events/import` (admin): `crawl-ledger events import` over HTTP.

The body is a whole-log export (`crawl-ledger events export`, JSON Lines), sent as it
is (any content type; `application/x-ndjson` is the natural one). It is streamed to a
scratch file under the data dir, at most `max_bytes` (413 beyond, before or while it
arrives), then checked and inserted by the same `runtime.admin.log_import.import_log` as the
command line: only into an empty store (409 otherwise, answered before the body is
stored), a gap, reorder, edited line, bad JSON or unknown event type refused with 422
naming the line, and nothing written on any refusal. `?expect=HASH` checks the audit
chain's last hash as `--expect` does. The import is a write (`api.consistency.Writes`):
no other write of this server runs meanwhile, a second import waits and then finds the
store full, and the answer comes once the projector has applied the import (or after
the write's bounded wait).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import IO, Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.concurrency import run_in_threadpool

from api.consistency import Writes
from api.routes import PROBLEMS, ApiProblem
from domain.errors import LedgerError
from runtime.admin.log_import import import_log, refuse_unless_empty
from runtime.defaults import DEFAULTS
from runtime.ledger import Ledger

__all__ = ["build_import_router"]

#: the label errors give the uploaded file ("upload:12: …" names its line 12)
LABEL = "upload"
_BODY = {"required": True, "content": {
    "application/x-ndjson": {"schema": {"type": "string", "format": "binary"}}}}
_TOO_LARGE: dict[int | str, dict[str, Any]] = {413: PROBLEMS[422] | {"description": "the upload is over the size cap"}}


def build_import_router(ledger: Ledger, writes: Writes, admin: Callable[..., Any],
                        max_bytes: int = DEFAULTS.import_max_bytes) -> APIRouter:
    router = APIRouter(tags=["events"])

    def imported(path: Path, expect: str | None) -> dict[str, Any]:
        with writes:
            summary = import_log(ledger, path, expect, label=LABEL)
        return {"events": summary.events, "position": summary.position,
                "chain_hash": summary.chain_hash, "sha256": summary.sha256}

    def refused_at_once() -> LedgerError | None:
        try:
            refuse_unless_empty(ledger)
        except LedgerError as error:
            return error
        return None

    @router.post("/events/import", dependencies=[Depends(admin)], responses=_TOO_LARGE,
                 openapi_extra={"requestBody": _BODY})
    async def import_events(
            request: Request,
            expect: Annotated[str | None, Query(pattern="^[0-9a-f]{64}$")] = None,
    ) -> dict[str, Any]:
        """Replay a whole-log export into this server's empty event store."""
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_bytes:
            raise ApiProblem(413, "Content Too Large", _over(max_bytes))
        early = await run_in_threadpool(refused_at_once)
        if early is not None:
            await _drain(request.stream(), max_bytes)  # answer after the body, not mid-upload
            raise early
        scratch = ledger.data_dir / "imports"
        scratch.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(prefix="upload-", suffix=".jsonl", dir=scratch)
        try:
            with os.fdopen(handle, "wb") as out:
                await _store(request.stream(), out, max_bytes)
            return await run_in_threadpool(imported, Path(name), expect)
        finally:
            Path(name).unlink(missing_ok=True)

    return router


def _over(max_bytes: int) -> str:
    return f"the upload is larger than {max_bytes} bytes (serve --max-import-mb); nothing imported"


async def _store(chunks: AsyncIterator[bytes], out: IO[bytes], max_bytes: int) -> None:
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > max_bytes:
            raise ApiProblem(413, "Content Too Large", _over(max_bytes))
        out.write(chunk)


async def _drain(chunks: AsyncIterator[bytes], max_bytes: int) -> None:
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > max_bytes:
            return
