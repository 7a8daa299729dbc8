"""What stands between the page and the network: the ASGI guard (``guard``: no server-side fetches
from file inputs, upload clean-up, login back-off via ``throttle``), ``/health`` and ``/ready``
(``health``), slow-client timeouts (``timeouts``), aborted uploads (``uploads``), audio from a URL
(``url_input``), the one temp root (``storage``) and per-request folders (``workspace``)."""
