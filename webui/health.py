"""Health endpoints served beside the Gradio app: /health (JSON) and /ready (200 or 503)."""

from __future__ import annotations

import time

from fastapi import FastAPI
from fastapi.responses import JSONResponse


def add_health_routes(app: FastAPI, engine, started_at: float | None = None) -> None:
    """Attach /health and /ready to ``app`` (the FastAPI app that serves the UI)."""
    started = started_at or time.time()

    @app.get("/health")
    def health():
        report = engine.last_report.to_dict() if engine.last_report else None
        return {"engine": engine.info(), "readiness": report, "uptime_s": round(time.time() - started, 1)}

    @app.get("/ready")
    def ready():
        ok = engine.ready and engine.last_report is not None and engine.last_report.ok
        return JSONResponse({"ready": ok}, status_code=200 if ok else 503)
