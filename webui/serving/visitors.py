"""Who is the operator, and what a visitor may see of the server.

The operator is a client on the server's own loopback (the browser on the machine it runs on), by the
address ``throttle.client_key`` gives: a trusted proxy's ``X-Forwarded-For`` names the client behind
nginx, so a visitor through the proxy is not mistaken for loopback. Operator actions (the second
checkpoint's load and unload) need it. The doctor's report on a server without a login shows a
visitor neither the server's paths nor its package versions: they are
replaced, in every string of the report, by ``HIDDEN``.
"""

from __future__ import annotations

import re

from webui.serving.throttle import LOOPBACK, client_key

HIDDEN = "(hidden)"  # i18n-exempt: a placeholder inside core's English evidence, beside its own words
_PATH = re.compile(r"(?<![\w:/])(?:~|/)[^\s'\"(),;]*[/\w]")  # an absolute (or ~) path inside a sentence
# 2.11.0, 4.57.3, 2.11.0+cu128 (12.5 GiB is a figure; 127.0.0.1:7860, an address with four parts, is not a version)
_VERSION = re.compile(r"(?<![\d.])\d+\.\d+\.\d+(?![\d]|\.\d)(?:[+-][\w.]+)?")


def is_operator(request, trusted: frozenset[str] = frozenset()) -> bool:
    """Whether a Gradio request comes from the server's loopback. No request (a call from Python) is
    the operator's."""
    if request is None:
        return True
    return address_of(request, trusted) in LOOPBACK


def address_of(request, trusted: frozenset[str] = frozenset()) -> str:
    """A Gradio request's client address as ``throttle.client_key`` reads it ("" for a call from Python)."""
    if request is None:
        return ""
    host = getattr(getattr(request, "client", None), "host", None) or ""
    headers = []
    for name in ("x-forwarded-for", "x-real-ip"):
        try:
            value = str(request.headers[name])
        except (AttributeError, KeyError, TypeError):
            continue
        headers.append((name.encode(), value.encode("latin-1", "replace")))
    return client_key({"client": (host, 0), "headers": headers}, trusted)


def may_see_server(request, trusted: frozenset[str] = frozenset()) -> bool:
    """Paths and versions are shown to a signed-in user (a login is set) or to the operator."""
    return bool(getattr(request, "username", None)) or is_operator(request, trusted)


def redacted(value):
    """``value`` (the doctor's JSON report) with every path and version number in its strings hidden."""
    if isinstance(value, str):
        return _VERSION.sub(HIDDEN, _PATH.sub(HIDDEN, value))
    if isinstance(value, dict):
        return {k: redacted(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redacted(v) for v in value]
    return value
