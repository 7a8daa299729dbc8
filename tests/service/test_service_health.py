"""/health and /ready on a FastAPI app, with a real engine on the tiny checkpoint, a real
engine whose weights are missing, and stand-in engines for states that are hard to reach."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from core.model.engine import Engine
from core.model.readiness import FAIL, PASS, SKIPPED, ReadinessReport, Step
from core.settings import Settings
from webui.serving.health import add_health_routes

VERSION_KEYS = {"python", "torch", "transformers", "qwen-tts", "gradio", "codec-workbench"}


def client_for(engine, started_at=None) -> TestClient:
    app = FastAPI()
    add_health_routes(app, engine, started_at)
    return TestClient(app)


@pytest.fixture(scope="module")
def ready_engine(tiny_checkpoint):
    engine = Engine(Settings(model=str(tiny_checkpoint), device="cpu"))
    report = engine.warm_up()
    assert report.ok, report.to_dict()
    return engine


@pytest.fixture(scope="module")
def missing_engine(tmp_path_factory):
    missing = tmp_path_factory.mktemp("empty") / "no-such-checkpoint"
    engine = Engine(Settings(model=str(missing), device="cpu"))
    engine.warm_up()
    return engine


def test_ready_engine_is_ready(ready_engine):
    client = client_for(ready_engine, started_at=time.time() - 5)
    r = client.get("/ready")
    assert r.status_code == 200, r.text
    assert r.json() == {"ready": True, "state": "ready", "reason": None}
    assert r.headers["cache-control"] == "no-store"

    h = client.get("/health")
    assert h.status_code == 200
    body = h.json()
    assert body["status"] == "ready" and body["ready"] is True and body["reason"] is None
    assert body["engine"]["state"] == "ready"
    assert body["engine"]["device"] == "cpu"
    assert body["engine"]["model_path"]
    steps = {s["name"]: s["status"] for s in body["readiness"]["steps"]}
    assert steps == {"cuda": SKIPPED, "weights": PASS, "roundtrip": PASS}
    assert body["readiness"]["ok"] is True
    assert VERSION_KEYS <= set(body["versions"])
    assert all(body["versions"][k] for k in VERSION_KEYS), body["versions"]
    assert 4.0 <= body["uptime_s"] < 3600
    assert isinstance(body["pid"], int)


def test_head_requests_work_for_probes(ready_engine):
    client = client_for(ready_engine)
    assert client.head("/ready").status_code == 200
    assert client.head("/health").status_code == 200


def test_missing_weights_fail_with_reason(missing_engine):
    client = client_for(missing_engine)
    h = client.get("/health")
    assert h.status_code == 200, "health answers even when the model failed"
    body = h.json()
    assert body["status"] == "failed" and body["ready"] is False
    assert "does not exist" in body["reason"] and "--model" in body["reason"], body["reason"]
    assert body["engine"]["error"] and body["engine"]["state"] == "failed"
    steps = {s["name"]: s["status"] for s in body["readiness"]["steps"]}
    assert steps["weights"] == FAIL and steps["roundtrip"] == SKIPPED

    r = client.get("/ready")
    assert r.status_code == 503
    assert r.json()["ready"] is False and r.json()["state"] == "failed"
    assert "does not exist" in r.json()["reason"]


def _fake_engine(state: str, report: ReadinessReport | None):
    engine = SimpleNamespace(
        state=SimpleNamespace(value=state),
        ready=state == "ready",
        last_report=report,
        error=None,
    )
    engine.not_ready_message = lambda: f"engine is {state}"
    engine.info = lambda: {"state": state, "error": None}
    return engine


def _report(*statuses):
    names = ("cuda", "weights", "roundtrip")
    return ReadinessReport(
        tuple(Step(n, n.title(), s, f"{n} detail", 0.0) for n, s in zip(names, statuses, strict=True)), 0.0
    )


@pytest.mark.parametrize(
    "state, report, code, reason_part",
    [
        ("loading", None, 503, "engine is loading"),
        ("ready", None, 503, "has not run yet"),
        ("ready", _report(SKIPPED, PASS, FAIL), 503, "roundtrip detail"),
        ("ready", _report(FAIL, PASS, PASS), 503, "cuda detail"),
        ("ready", _report(PASS, PASS, PASS), 200, None),
        ("ready", _report(SKIPPED, PASS, PASS), 200, None),
    ],
)
def test_ready_requires_every_step(state, report, code, reason_part):
    client = client_for(_fake_engine(state, report))
    r = client.get("/ready")
    assert r.status_code == code, r.json()
    if reason_part is None:
        assert r.json()["reason"] is None
    else:
        assert reason_part in r.json()["reason"]
    status = client.get("/health").json()["status"]
    assert status == (state if code == 200 or state != "ready" else "degraded")


def test_routes_win_over_a_ui_mounted_at_root(ready_engine):
    """The UI may be mounted at "/" before the health routes are added."""
    import gradio as gr

    with gr.Blocks() as demo:
        gr.Markdown("hello")
    app = gr.mount_gradio_app(FastAPI(), demo, path="/")
    add_health_routes(app, ready_engine)
    client = TestClient(app)
    r = client.get("/ready")
    assert r.status_code == 200 and r.json()["ready"] is True
    assert client.get("/health").json()["status"] == "ready"
    assert client.get("/").status_code == 200
