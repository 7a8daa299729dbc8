"""Health endpoints served beside the Gradio app, on the same port.

- ``GET /health``: always 200 while the process serves. JSON with the engine's state (and,
  when loading failed, the reason), the last readiness report, library versions, uptime.
- ``GET /ready``: 200 only when the last readiness check passed (every step passed, or was
  skipped because the engine runs on the CPU), the engine is ready, the temp folder writable,
  the data folder has ``storage.MIN_FREE_MIB`` free, and the blind-test and shared-tests databases
  are usable; 503 otherwise, with the reason. Load balancers and supervisors poll this one.

Neither endpoint takes the engine's lock, so both answer while a long job runs. Both are
open even when the UI has a password (probes carry no credentials); they reveal no audio,
and /health then keeps its details (paths, versions, pid) for signed-in requests.
"""

from __future__ import annotations

import os
import platform
import time
from functools import lru_cache
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from core.listening import abx_db
from core.listening.shared_test_store import store_for
from core.versions import installed_versions
from webui.serving import guard, storage

HEALTH_PATH = "/health"
READY_PATH = "/ready"
_DISTRIBUTIONS = ("codec-workbench", "torch", "transformers", "qwen-tts", "gradio")  # shown in "versions"


@lru_cache(maxsize=1)
def versions() -> dict[str, str | None]:
    """Versions of Python and the libraries that decide the codec's behaviour."""
    found: dict[str, str | None] = {"python": platform.python_version(), **installed_versions(_DISTRIBUTIONS)}
    try:
        import torch

        found["cuda"] = torch.version.cuda  # CUDA the torch build targets (None: CPU build)
    except Exception:  # pragma: no cover - torch is a hard dependency
        found["cuda"] = None
    return found


def readiness_verdict(engine, temp_root: Path | None = None) -> tuple[bool, str | None]:
    """(ready, reason): ready only when the engine is loaded, its last check passed, the
    app can write its files under ``temp_root`` (a missing root is recreated first) and the
    blind test can store answers (``core.listening.abx_db.store_problem``)."""
    if temp_root is not None and (trouble := storage.problem(temp_root)):
        return False, trouble
    settings = getattr(engine, "settings", None)
    data_dir = getattr(settings, "data_dir", None)
    if data_dir and (trouble := data_space_problem(Path(data_dir))):
        return False, trouble
    if data_dir and (trouble := abx_db.store_problem(data_dir)):
        return False, f"blind-test database {Path(data_dir) / abx_db.DB_NAME}: {trouble}"
    if data_dir and (trouble := store_for(settings).db.problem()):
        return False, f"shared-tests database: {trouble}"
    state = getattr(engine.state, "value", str(engine.state))
    if not engine.ready:
        return False, engine.not_ready_message() if hasattr(engine, "not_ready_message") else f"engine is {state}"
    report = engine.last_report
    if report is None:
        return False, "the readiness check has not run yet"
    if not report.ok:
        return False, "readiness check failed: " + "; ".join(report.problems())
    return True, None


def data_space_problem(data_dir: Path, min_free_mib: float | None = None) -> str | None:
    """The data folder's disk (answers, shared tests' audio) nearly full (under ``storage.MIN_FREE_MIB``
    free), or None. A folder not made yet is judged by the nearest one that exists."""
    min_free_mib = storage.MIN_FREE_MIB if min_free_mib is None else min_free_mib
    folder = next((p for p in (data_dir, *data_dir.parents) if p.exists()), None)
    if folder is None:
        return None
    free = storage.free_mib(folder)
    if free < min_free_mib:
        return f"the disk of the data folder {data_dir} is full ({free:.0f} MiB free); free some space"
    return None


def health_payload(engine, started_at: float, temp_root: Path | None = None) -> dict:
    ready, reason = readiness_verdict(engine, temp_root)
    info = engine.info()
    report = engine.last_report
    return {
        "status": info["state"] if ready or info["state"] != "ready" else "degraded",
        "ready": ready,
        "reason": reason,
        "engine": info,
        "readiness": report.to_dict() if report is not None else None,
        "versions": versions(),
        "uptime_s": round(time.time() - started_at, 1),
        "started_at": started_at,
        "pid": os.getpid(),
    }


def public_health(payload: dict) -> dict:
    """What /health shows to requests without the login, when the app has one."""
    return {
        "status": payload["status"],
        "state": payload["engine"]["state"],
        "ready": payload["ready"],
        "reason": payload["reason"],
    }


def add_health_routes(app: FastAPI, engine, started_at: float | None = None, temp_root: Path | None = None) -> None:
    """Attach /health and /ready to ``app`` (the FastAPI app that serves the UI).

    The routes are moved to the front of the route table, so they answer even when the UI
    is mounted at "/" before this is called. ``temp_root``: where the app writes (checked by
    both). When the app has a login, /health shows the public part (state, ready, reason) to
    requests that have not signed in.
    """
    started = started_at if started_at is not None else time.time()

    async def health(request: Request):
        payload = await run_in_threadpool(health_payload, engine, started, temp_root)
        if not guard.signed_in(request.scope):
            payload = public_health(payload)
        return JSONResponse(payload, headers={"Cache-Control": "no-store"})

    async def ready():
        ok, reason = await run_in_threadpool(readiness_verdict, engine, temp_root)  # a database may be slow to answer
        body = {"ready": ok, "state": engine.state.value, "reason": reason}
        return JSONResponse(body, status_code=200 if ok else 503, headers={"Cache-Control": "no-store"})

    before = len(app.router.routes)
    app.add_api_route(HEALTH_PATH, health, methods=["GET", "HEAD"], include_in_schema=False)
    app.add_api_route(READY_PATH, ready, methods=["GET", "HEAD"], include_in_schema=False)
    added = app.router.routes[before:]
    del app.router.routes[before:]
    app.router.routes[0:0] = added
