"""Audio from a URL: the refusal rules. No traffic leaves this machine: addresses are
classified without connecting, name lookups go to a fake resolver, and the only server
is a local one on 127.0.0.1 (allowed by a test-only policy switch)."""

from __future__ import annotations

import http.server
import socket
import threading
from pathlib import Path

import pytest
import soundfile as sf

from core.audio.files import load_audio
from core.errors import AudioInputError
from webui.serving import url_input
from webui.serving.url_input import UrlPolicy, blocked_reason, check, fetch, parse_url

LOCAL = UrlPolicy(max_bytes=200_000, timeout_s=10.0, allow_loopback=True)  # tests only


def fake_resolver(*addresses):
    def resolve(host, port, type=0):  # noqa: A002 - mirrors socket.getaddrinfo
        family = lambda a: socket.AF_INET6 if ":" in a else socket.AF_INET  # noqa: E731
        return [(family(a), socket.SOCK_STREAM, 6, "", (a, port)) for a in addresses]

    return resolve


@pytest.mark.parametrize(
    "url, words",
    [
        ("ftp://example.com/a.wav", "Only http:// and https://"),
        ("file:///etc/passwd", "Only http:// and https://"),
        ("javascript:alert(1)", "Only http:// and https://"),
        ("example.com/a.wav", "no scheme"),
        ("", "Enter an audio URL"),
        ("https://user:pw@example.com/a.wav", "user name or password"),
        ("http:///a.wav", "no host"),
        ("http://example.com:99999/a.wav", "not a valid URL"),
    ],
)
def test_bad_urls_are_refused_before_any_lookup(url, words):
    with pytest.raises(AudioInputError, match=words):
        check(url, resolver=fake_resolver("93.184.216.34"))


@pytest.mark.parametrize(
    "address, words",
    [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.9", "private"),
        ("192.168.1.1", "private"),
        ("fd00::1", "private"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("::ffff:10.0.0.1", "private"),
        ("::ffff:127.0.0.1", "loopback"),
        ("0.0.0.0", "^an unspecified address"),  # not "private" (issue 8, item 7)
        ("::", "^an unspecified address"),
        ("255.255.255.255", "^the broadcast address"),
        ("0.1.2.3", "this network"),
        ("224.0.0.1", "multicast"),
        ("100.64.0.1", "not a public"),
    ],
)
def test_non_public_addresses_are_blocked(address, words):
    import re

    reason = blocked_reason(address)
    assert reason is not None and re.search(words, reason)


@pytest.mark.parametrize("address", ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111"])
def test_public_addresses_pass(address):
    assert blocked_reason(address) is None


@pytest.mark.parametrize("addresses", [("10.0.0.7",), ("93.184.216.34", "192.168.0.2"), ("169.254.169.254",)])
def test_host_resolving_to_any_private_address_is_refused(addresses):
    with pytest.raises(AudioInputError, match="Refused: audio.example resolves to"):
        check("https://audio.example/clip.wav", resolver=fake_resolver(*addresses))


def test_public_host_is_pinned_to_the_checked_address():
    target = check("https://audio.example:8443/a/clip.wav?x=1", resolver=fake_resolver("93.184.216.34"))
    assert (target.scheme, target.host, target.port, target.path, target.address) == (
        "https",
        "audio.example",
        8443,
        "/a/clip.wav?x=1",
        "93.184.216.34",
    )


def test_loopback_url_is_refused_by_default(tmp_path):
    with pytest.raises(AudioInputError, match="loopback"):
        fetch("http://127.0.0.1:9/clip.wav", tmp_path)  # refused before connecting
    assert list(tmp_path.iterdir()) == []


class _Handler(http.server.BaseHTTPRequestHandler):
    routes: dict = {}

    def do_GET(self):  # noqa: N802 - http.server's name
        status, headers, body = self.routes.get(self.path, (404, {}, b"missing"))
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def local_server(tmp_path_factory, speech):
    clip = tmp_path_factory.mktemp("served") / "clip.wav"
    sf.write(clip, speech(1.0), 24_000, subtype="PCM_16")
    wav = clip.read_bytes()
    _Handler.routes = {
        "/clip.wav": (200, {"Content-Length": str(len(wav))}, wav),
        "/big.wav": (200, {"Content-Length": "999999"}, b"x" * 1000),
        "/big-undeclared.wav": (200, {}, b"x" * 300_000),  # no Content-Length: counted while reading
        "/to-private": (302, {"Location": "http://10.0.0.1/clip.wav"}, b""),
        "/to-clip": (301, {"Location": "/clip.wav"}, b""),
        "/empty.wav": (200, {"Content-Length": "0"}, b""),
        "/gone.wav": (410, {}, b"gone"),
    }
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_download_lands_in_the_request_folder_and_decodes(local_server, tmp_path):
    folder = tmp_path / "req"
    folder.mkdir()
    path = fetch(local_server + "/clip.wav", folder, LOCAL)
    assert path.parent == folder and path.name == "clip.wav"
    assert load_audio(path).facts.duration_s == pytest.approx(1.0)


def test_redirects_are_followed_and_checked_again(local_server, tmp_path):
    assert fetch(local_server + "/to-clip", tmp_path, LOCAL).name == "clip.wav"
    with pytest.raises(AudioInputError, match="10.0.0.1, a private network address"):
        fetch(local_server + "/to-private", tmp_path, LOCAL)  # refused before connecting to 10.0.0.1


@pytest.mark.parametrize("path", ["/big.wav", "/big-undeclared.wav"])
def test_size_cap(local_server, tmp_path, path):
    with pytest.raises(AudioInputError, match="larger than the 0.191 MiB limit"):
        fetch(local_server + path, tmp_path, LOCAL)
    assert list(tmp_path.iterdir()) == []  # no partial file left behind


@pytest.mark.parametrize("path, words", [("/empty.wav", "empty"), ("/gone.wav", "410")])
def test_empty_or_failed_downloads(local_server, tmp_path, path, words):
    with pytest.raises(AudioInputError, match=words):
        fetch(local_server + path, tmp_path, LOCAL)


def test_timeout_is_reported(tmp_path):
    """A server that accepts but never answers: the socket timeout ends the wait."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    try:
        policy = UrlPolicy(max_bytes=1000, timeout_s=0.5, allow_loopback=True)
        with pytest.raises(AudioInputError, match="Could not fetch|too long"):
            fetch(f"http://127.0.0.1:{listener.getsockname()[1]}/slow.wav", tmp_path, policy)
    finally:
        listener.close()


def test_file_names_are_made_safe():
    assert url_input._file_name("/a/b/../my%20clip (1).wav?x=1") == "my_20clip_1_.wav"
    assert url_input._file_name("/") == "url-audio"
    assert parse_url("HTTPS://Example.COM")[1:] == ("example.com", 443, "/")


def test_handler_fetches_into_its_own_request_folder_then_round_trips(local_server, engine, tmp_path):
    from tests.webui.tab_handlers import Tabs
    from webui.serving.workspace import Workspace

    h = Tabs.of(engine, Workspace(tmp_path / "work"), url_policy=LOCAL)
    path = Path(h.roundtrip.fetch_url(local_server + "/clip.wav"))
    assert path.is_relative_to(tmp_path / "work") and path.name == "clip.wav"
    assert h.roundtrip.roundtrip(str(path))[-1]["tokens"]["frames"] == 13


def test_handler_turns_refusals_into_gr_errors(engine, tmp_path):
    import gradio as gr

    from tests.webui.tab_handlers import Tabs
    from webui.serving.workspace import Workspace

    h = Tabs.of(engine, Workspace(tmp_path / "work"), url_policy=UrlPolicy())
    with pytest.raises(gr.Error, match="loopback"):
        h.roundtrip.fetch_url("http://localhost:7860/secret.wav")
    with pytest.raises(gr.Error, match="Only http"):
        h.roundtrip.fetch_url("file:///etc/passwd")


def _trickle_server(delay_s: float, head: bytes, drip: bytes = b"x", drips: int = 200):
    """A raw loopback server: ``head`` at once, then ``drip`` every ``delay_s`` seconds, at most
    ``drips`` times (so a test that fails still ends)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    stop = threading.Event()

    def serve():
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        with conn:
            try:
                conn.recv(4096)
                conn.sendall(head)
                for _ in range(drips):
                    if stop.wait(delay_s):
                        break
                    conn.sendall(drip)
            except OSError:
                pass

    threading.Thread(target=serve, daemon=True).start()
    return listener, stop


@pytest.mark.parametrize(
    "head, drip",
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 150000\r\n\r\n", b"x"),  # body trickles in
        (b"HTTP/1.1 200 OK\r\nX-Slow: ", b"x"),  # headers never end
        # Responses without a length make http.client close the connection object at
        # getresponse(): the deadline must survive that (issue 8, item 3).
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", b"1\r\nx\r\n"),  # chunked
        (b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", b"x"),  # close-delimited
        (b"HTTP/1.0 200 OK\r\n\r\n", b"x"),  # HTTP/1.0, no length at all
    ],
)
def test_a_slow_trickle_cannot_outlast_the_overall_time_limit(tmp_path, head, drip):
    """Each byte arrives well within the socket timeout, but the whole download must still
    end at the policy's time limit, whatever the shape of the response."""
    import time

    listener, stop = _trickle_server(0.05, head, drip)
    try:
        policy = UrlPolicy(max_bytes=200_000, timeout_s=1.0, allow_loopback=True)
        start = time.monotonic()
        with pytest.raises(AudioInputError, match="too long"):
            fetch(f"http://127.0.0.1:{listener.getsockname()[1]}/slow.wav", tmp_path, policy)
        assert time.monotonic() - start < 4.0
    finally:
        stop.set()
        listener.close()
    assert list(tmp_path.iterdir()) == []  # no partial file left behind


def test_addresses_keep_the_resolvers_order():
    """getaddrinfo orders addresses by the system's preference (RFC 6724); sorting them as
    strings would put IPv6 first on machines that cannot reach IPv6."""
    target = check("https://audio.example/a.wav", resolver=fake_resolver("93.184.216.34", "2606:4700:4700::1111"))
    assert target.addresses == ("93.184.216.34", "2606:4700:4700::1111")
    assert target.address == "93.184.216.34"


def test_an_unreachable_address_falls_back_to_the_next_checked_one(local_server, tmp_path):
    """127.0.0.0 refuses the connection (nothing listens there): the next address is tried."""
    port = int(local_server.rsplit(":", 1)[1])
    path = fetch(
        f"http://audio.test:{port}/clip.wav", tmp_path, LOCAL, resolver=fake_resolver("127.0.0.0", "127.0.0.1")
    )
    assert path.name == "clip.wav"
