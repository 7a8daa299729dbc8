"""Serving the codec to programs without the page: the decode WebSocket (``decode_socket``), its
standalone server (``decode_server``) and a Python client for it (``stream_client``)."""
