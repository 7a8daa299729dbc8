"""``/listen/<link>``: the page a listener opens from a shared test's link, and its JSON and audio.

The page holds only that test (no upload, no lab, no other results). A listener joins with at most
a nickname; the server answers with a listener key in an HttpOnly cookie scoped to the test's path,
so answers cannot be sent for another listener. Every sound is named by an opaque handle
(``webui.jobs.shared_test``): the page, its URLs and the response headers say nothing of which condition
a sound is (same length, own dither, ``Cache-Control: no-store``, no ETag or Last-Modified, no file
name).

Routes (``<link>`` is the test's secret link):

- ``GET /listen/<link>``: the page; ``GET .../state``: what to show now (JSON);
- ``POST .../join`` ``{"nickname": "..."}``; ``POST .../rate`` ``{"screen": 0, "ratings": {handle: 0..100}}``;
  ``POST .../abx`` ``{"trial": 0, "answer": "A"}``;
- ``GET|HEAD .../audio/<handle>``: a 16-bit WAV, byte ranges answered.

Errors are JSON ``{"error": sentence}`` with 400 (bad input), 403 (not joined / not yours), 404
(unknown link or sound), 409 (already answered, or the test is full), 410 (closed or expired: no answers, no sound), 429 (too many answers).
Answers are limited per listener (:data:`ANSWERS_PER_MIN` a minute) and per address, joins per
address and test, audio requests per listener and per address (``webui.serving.shared_test_audio``
makes each sound's WAV once, off the event loop, and records what each listener fetched). A failing
database is 503 in words. The limits are counted in the shared tests' database (``core.listening.shared_test_limits``), so
they hold across the replicas behind nginx; the address is the client's as the trusted proxies
(``--trusted-proxies``) name it (``throttle.client_key``), so a client behind nginx is not counted as
nginx, and a client that is no trusted proxy cannot pick its own address with ``X-Forwarded-For``.
"""

from __future__ import annotations

import logging
import time

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool

from core.errors import CodecError
from core.listening import mushra
from core.listening.shared_test_db import SharedTestDbError
from core.listening.shared_test_limits import SharedTestLimits
from core.listening.shared_test_schema import SharedTestError
from core.listening.shared_test_store import SharedTestStore
from webui import i18n
from webui.jobs import shared_test
from webui.serving import json_text, shared_test_audio
from webui.serving.guard import signed_in
from webui.serving.throttle import client_key
from webui.views import listen_page

logger = logging.getLogger(__name__)

PREFIX = "/listen/"
COOKIE = "cw_listener"
ANSWERS_PER_MIN = 30  # answer requests (rate, abx) per listener per minute (a quick ABX listener sends ~10)
PER_ADDRESS_PER_MIN = 600  # any answer from one address, whatever listener it claims to be
JOINS_PER_MIN = 120  # joins per address per test per minute (a room's phones may share one address)
AUDIO_PER_MIN = 600  # audio requests per listener per test and minute (a MUSHRA screen's page: about 50)
AUDIO_PER_ADDRESS_PER_MIN = 6000  # any listener's audio requests from one address (a room behind one NAT)
NO_STORE = shared_test_audio.NO_STORE
_STATUS = {"unknown": 404, "closed": 410, "expired": 410, "full": 409, "replay": 409, "forbidden": 403, "bad": 400}


class _Refused(i18n.TranslatedError):
    """A listener request refused here: its HTTP status and a catalogue key."""

    def __init__(self, status: int, key: str, **fields):
        self.status = status
        super().__init__(key, **fields)


def shared_test_routes(
    store: SharedTestStore,
    trusted: frozenset[str] = frozenset(),
    answers_per_min: int = ANSWERS_PER_MIN,
    joins_per_min: int = JOINS_PER_MIN,
    per_address_per_min: int = PER_ADDRESS_PER_MIN,
    audio_per_min: int = AUDIO_PER_MIN,
    audio_per_address_per_min: int = AUDIO_PER_ADDRESS_PER_MIN,
) -> list[APIRoute]:
    """The listener routes, to hand to Gradio's FastAPI app beside /health. ``trusted``: the
    operator's ``--trusted-proxies``, whose X-Forwarded-For names the client."""
    app = FastAPI()
    limits = SharedTestLimits(store.db)  # counted in the shared tests' database: every replica counts the same calls
    cache = shared_test_audio.WavCache()  # each sound's dithered WAV, made once

    def answer_allowed(request: Request, link: str) -> bool:
        """An answer counts against its address, then its listener (their cookie, else the address) in this test."""
        address = client_key(request.scope, trusted)
        if not limits.allow("answers-from:" + address, per_address_per_min):
            return False
        return limits.allow(f"answers-of:{key_of(request) or address}:{link}", answers_per_min)

    def lang_of(request: Request) -> str:
        return i18n.language_of(request)  # type: ignore[arg-type]  # reads .headers, as gr.Request has

    def refuse(request: Request, status: int, key: str, detail: str = "") -> JSONResponse:
        words = i18n.text(key, lang_of(request))
        return JSONResponse({"error": words + (f" ({detail})" if detail else "")}, status_code=status, headers=NO_STORE)

    def failed(request: Request, e: Exception) -> JSONResponse:
        if isinstance(e, _Refused | shared_test_audio.NoSound):
            return JSONResponse({"error": e.in_language(lang_of(request))}, status_code=e.status, headers=NO_STORE)
        if isinstance(e, SharedTestError):
            return refuse(request, _STATUS.get(e.reason, 400), f"listen.error.{e.reason}", str(e))
        if isinstance(e, mushra.MushraError):
            return refuse(request, 400, "listen.error.bad", str(e))
        if isinstance(e, SharedTestDbError):  # the operator's to fix (the log and /ready say what); the listener waits
            logger.error("shared test request failed: %s", e)
            return refuse(request, 503, "listen.error.database")
        logger.exception("shared test request failed")
        return refuse(request, 500, "listen.error.server")

    def key_of(request: Request) -> str:
        return request.cookies.get(COOKIE, "")

    async def page(link: str, request: Request):
        if not signed_in(request.scope):
            return refuse(request, 401, "listen.error.sign_in")
        try:
            info = store.open_test(link)
        except (SharedTestError, CodecError, _Refused) as e:
            return failed(request, e)
        return HTMLResponse(
            listen_page.page(info.kind, lang_of(request), shared_test.test_rate(info)), headers=NO_STORE
        )

    async def state(link: str, request: Request):
        if not signed_in(request.scope):
            return refuse(request, 401, "listen.error.sign_in")
        try:
            return JSONResponse(_state(store, link, key_of(request)), headers=NO_STORE)
        except (SharedTestError, CodecError, _Refused) as e:
            return failed(request, e)

    async def join(link: str, request: Request):
        if not signed_in(request.scope):
            return refuse(request, 401, "listen.error.sign_in")
        try:
            if not limits.allow(f"joins-from:{client_key(request.scope, trusted)}:{link}", joins_per_min):
                return refuse(request, 429, "listen.error.rate")
            body = await _body(request)
            if key_of(request):  # already joined: the same listener goes on
                try:
                    store.listener(link, key_of(request))
                    return JSONResponse(_state(store, link, key_of(request)), headers=NO_STORE)
                except SharedTestError:
                    pass
            key, _who = store.join(link, body.get("nickname", ""))
            out = JSONResponse(_state(store, link, key), headers=NO_STORE)
            out.set_cookie(COOKIE, key, httponly=True, samesite="strict", path=PREFIX + link, max_age=90 * 86400)
            return out
        except (SharedTestError, CodecError, _Refused) as e:
            return failed(request, e)

    async def rate_screen(link: str, request: Request):
        try:
            if not answer_allowed(request, link):
                return refuse(request, 429, "listen.error.rate")
            body = await _body(request)
            key = key_of(request)
            info, who = store.listener(link, key)
            screen = body.get("screen")
            if not isinstance(screen, int) or isinstance(screen, bool):
                raise _Refused(400, "listen.bad_screen", value=repr(screen))
            slots = shared_test.mushra_slots(info.seed, who.listener, screen, info.plan["conditions"])
            given = body.get("ratings")
            if not isinstance(given, dict):
                raise _Refused(400, "listen.bad_ratings")
            unknown = [h for h in given if slots.get(h) in (None, "reference")]
            if unknown:
                raise _Refused(400, "listen.not_on_screen", n=len(unknown))
            store.rate(link, key, screen, {slots[h]: v for h, v in given.items()})
            return JSONResponse(_state(store, link, key), headers=NO_STORE)
        except (SharedTestError, CodecError, _Refused) as e:
            return failed(request, e)

    async def answer_abx(link: str, request: Request):
        try:
            if not answer_allowed(request, link):
                return refuse(request, 429, "listen.error.rate")
            body = await _body(request)
            trial = body.get("trial")
            if not isinstance(trial, int) or isinstance(trial, bool):
                raise _Refused(400, "listen.bad_trial", value=repr(trial))
            store.answer_abx(link, key_of(request), trial, body.get("answer", ""))
            return JSONResponse(_state(store, link, key_of(request)), headers=NO_STORE)
        except (SharedTestError, CodecError, _Refused) as e:
            return failed(request, e)

    async def audio(link: str, handle: str, request: Request):
        if not signed_in(request.scope):
            return refuse(request, 401, "listen.error.sign_in")
        try:
            address = client_key(request.scope, trusted)
            if not limits.allow("audio-from:" + address, audio_per_address_per_min) or not limits.allow(
                f"audio-of:{key_of(request) or address}:{link}", audio_per_min
            ):
                return refuse(request, 429, "listen.error.rate")
            data = await run_in_threadpool(shared_test_audio.sound, store, cache, link, key_of(request), handle)
        except (SharedTestError, CodecError, _Refused, shared_test_audio.NoSound) as e:
            return failed(request, e)
        return shared_test_audio.ranged(request, data)

    base = PREFIX + "{link}"
    app.add_api_route(base, page, methods=["GET"], include_in_schema=False)
    app.add_api_route(base + "/state", state, methods=["GET"], include_in_schema=False)
    app.add_api_route(base + "/join", join, methods=["POST"], include_in_schema=False)
    app.add_api_route(base + "/rate", rate_screen, methods=["POST"], include_in_schema=False)
    app.add_api_route(base + "/abx", answer_abx, methods=["POST"], include_in_schema=False)
    app.add_api_route(base + "/audio/{handle}", audio, methods=["GET", "HEAD"], include_in_schema=False)
    return [r for r in app.routes if isinstance(r, APIRoute)]


async def _body(request: Request) -> dict:
    try:
        body = json_text.loads(await request.body())
    except ValueError:
        raise _Refused(400, "listen.bad_json") from None
    if not isinstance(body, dict):
        raise _Refused(400, "listen.bad_json")
    return body


def _state(store: SharedTestStore, link: str, key: str) -> dict:
    """What the page shows now: the test's state, and the listener's current screen or trial (only
    handles, never condition ids)."""
    info = store.open_test(link)
    out: dict = {"kind": info.kind, "state": info.state(time.time()), "joined": False}
    if not key:
        return out
    try:
        _info, who = store.listener(link, key)
    except SharedTestError:
        return out
    out |= {"joined": True, "listener": who.number, "nickname": who.nickname}
    if info.kind == "mushra":
        plan = mushra.Plan.from_dict(info.plan)
        done = store.rated_items(link, key)
        screen = next((i for i in range(len(plan.items)) if i not in done), None)
        out |= {"screens": len(plan.items), "screen": screen}
        if screen is not None:
            slots = shared_test.mushra_slots(info.seed, who.listener, screen, plan.conditions)
            out["reference"] = next(h for h, c in slots.items() if c == "reference")
            out["sounds"] = [h for h, c in slots.items() if c != "reference"]  # the listener's own order
        return out
    plan_x = store.abx_plan(info, who)
    trial = store.abx_done(link, key)
    out |= {"trials": len(plan_x), "trial": trial if trial < len(plan_x) else None}
    if trial < len(plan_x):
        out["sounds"] = [shared_test.handle(info.seed, who.listener, trial, slot) for slot in range(3)]  # A, B, X
    return out
