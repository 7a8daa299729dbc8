"""The address a request comes from is its TCP peer's, unless that peer is a proxy the operator named.

Gradio starts uvicorn with uvicorn's defaults: ``proxy_headers=True`` and ``forwarded_allow_ips``
from ``FORWARDED_ALLOW_IPS`` or ``127.0.0.1``. uvicorn's ``ProxyHeadersMiddleware`` then rewrites
``scope["client"]`` from ``X-Forwarded-For`` for any request from loopback before the app sees it,
so any local client (or a same-host TLS terminator not named in ``--trusted-proxies``) could pick its
own address and escape every per-client limit: the login back-off, the shared tests' join and answer
limits, the live slots, the job limits.

:func:`install` tells the started server to read no proxy header at all: ``scope["client"]`` stays
the TCP peer and ``scope["scheme"]`` what the connection is. Believing a proxy is this app's own
rule, in one place per header: ``webui.serving.throttle.client_key`` (the client address, only from
``--trusted-proxies``) and ``webui.serving.origins.own_origin`` (the scheme and host the browser
used). Gradio reads ``X-Forwarded-Host`` / ``-Proto`` itself to build its URLs; that names no client.
"""

from __future__ import annotations

import logging

from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

logger = logging.getLogger(__name__)


def install(server) -> None:
    """Make a started uvicorn ``server`` hand the app the TCP peer's address on every new connection
    (uvicorn gives each connection ``config.loaded_app``, with uvicorn's proxy middleware outermost)."""
    config = server.config
    config.proxy_headers = False
    config.forwarded_allow_ips = []
    app = config.loaded_app
    while isinstance(app, ProxyHeadersMiddleware):
        app = app.app
    config.loaded_app = app
