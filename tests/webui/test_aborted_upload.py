"""Issue 31, finding 11: every aborted upload logged an 80-line traceback (a client fills the log
cheaply by starting uploads and hanging up). The upload route's end by a client that went away is now
one line, and what it spooled is still removed."""

from __future__ import annotations

import asyncio
import logging

from starlette.requests import Request
from starlette.responses import PlainTextResponse

from webui.serving import uploads


async def _form_app(scope, receive, send):
    form = await Request(scope, receive).form()  # the multipart parser Gradio's upload route uses
    await PlainTextResponse(str(len(form)))(scope, receive, send)


def _aborted_upload(tmp_path):
    boundary = b"xyz"
    head = b'--xyz\r\nContent-Disposition: form-data; name="files"; filename="a.wav"\r\n\r\n' + b"R" * 70_000
    messages = [{"type": "http.request", "body": head, "more_body": True}, {"type": "http.disconnect"}]
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/gradio_api/upload",
        "headers": [(b"content-type", b"multipart/form-data; boundary=" + boundary)],
        "query_string": b"",
    }

    async def receive():
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message):
        raise AssertionError("nothing is sent to a client that went away")

    asyncio.run(uploads.tracked(_form_app, scope, receive, send, tmp_path))


def test_an_aborted_upload_is_one_log_line_and_no_traceback(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    _aborted_upload(tmp_path)  # raised ClientDisconnect before: the server logged its traceback
    lines = [r for r in caplog.records if r.name.startswith("webui")]
    assert len(lines) == 1 and "went away" in lines[0].getMessage() and lines[0].exc_info is None
    assert not list(tmp_path.iterdir())  # what it spooled is gone
