"""``GET /report/<request folder>/<name>_report.html``: the round trip's report page opened in the
browser (Gradio's file route sends every HTML file as an attachment, a guard against
pages that run scripts, so the link downloaded instead of opening).

Only a report this server wrote is served: a ``req-report-*`` folder directly under the temp root
and a name ending ``_report.html``, resolved inside that root. The page is served inline with a
policy that lets it run nothing (no script, no request anywhere: its audio and pictures are
``data:`` URLs, its style inline) and in a sandbox, so a report is as safe to open as a picture.
Behind a login it is served to signed-in requests only.
"""

from __future__ import annotations

import re
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse, PlainTextResponse
from fastapi.routing import APIRoute
from starlette.requests import Request

from webui.serving import guard

REPORT_PATH = "/report"
FOLDER = re.compile(r"req-report-[A-Za-z0-9_]+")
NAME = re.compile(r"[A-Za-z0-9_.-]+_report\.html")
POLICY = (
    "default-src 'none'; img-src data:; media-src data:; style-src 'unsafe-inline'; sandbox"  # i18n-exempt: a header
)


def report_url(root: Path, html_path: Path | str) -> str | None:
    """The page's address for a report written under ``root`` (relative, like Gradio's file links);
    None when the path is not one this route serves."""
    path = Path(html_path)
    try:
        rel = path.resolve().relative_to(Path(root).resolve())
    except ValueError:
        return None
    if len(rel.parts) != 2 or not FOLDER.fullmatch(rel.parts[0]) or not NAME.fullmatch(rel.parts[1]):
        return None
    return f"{REPORT_PATH.lstrip('/')}/{rel.parts[0]}/{rel.parts[1]}"


def report_routes(temp_root: Path) -> list[APIRoute]:
    """The route, as routes to hand to Gradio's FastAPI app (like webui.server's health routes)."""
    root = Path(temp_root)

    async def report_page(folder: str, name: str, request: Request):
        if not guard.signed_in(request.scope):
            return PlainTextResponse("Sign in first.", status_code=401)  # i18n-exempt: HTTP status text
        if not FOLDER.fullmatch(folder) or not NAME.fullmatch(name):
            return PlainTextResponse("Not a report.", status_code=404)
        path = (root / folder / name).resolve()
        if root.resolve() not in path.parents or not path.is_file():
            gone = "This report is gone (reports are kept for a while only)."  # i18n-exempt: HTTP status text
            return PlainTextResponse(gone, status_code=404)
        headers = {
            "Content-Disposition": f'inline; filename="{name}"',  # i18n-exempt: a header
            "Content-Security-Policy": POLICY,
            "X-Content-Type-Options": "nosniff",
            "Cache-Control": "private, no-store",  # i18n-exempt: a header
        }
        html_type = "text/html; charset=utf-8"  # i18n-exempt: a header
        return FileResponse(path, media_type=html_type, headers=headers)

    app = FastAPI()
    app.add_api_route(REPORT_PATH + "/{folder}/{name}", report_page, methods=["GET", "HEAD"], include_in_schema=False)
    return [route for route in app.routes if isinstance(route, APIRoute)]
