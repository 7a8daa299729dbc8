"""``/decode/ws`` over a real socket to ``serve-decode``'s server (uvicorn in a thread) with the Python
client (core.serving.stream_client): the streamed PCM equals the engine's decode of all the codes (both
formats, JSON and binary frames, an end message and a second utterance on the same socket); each bad
input gets a sentence and closes only its own socket while another stream goes on; limits per client
and on the server; a browser page's Origin is refused; a client that never reads is closed."""

from __future__ import annotations

import json
import socket
import time

import numpy as np
import pytest

from core.codec import NUM_CODEBOOKS
from core.model.engine import Engine
from core.serving import decode_socket
from core.serving.stream_client import StreamClient, StreamClientError
from core.settings import Settings
from tests.core.serving.decode_servers import RunningServer

pytestmark = pytest.mark.usefixtures("single_thread")

MIN_SNR_DB = 80.0


def snr_db(x: np.ndarray, ref: np.ndarray) -> float:
    assert x.shape == ref.shape, (x.shape, ref.shape)
    err = float(np.sum((x.astype(np.float64) - ref) ** 2))
    return float("inf") if err == 0 else float(10 * np.log10(np.sum(ref.astype(np.float64) ** 2) / err))


@pytest.fixture(scope="module")
def engine(tiny_checkpoint):
    engine = Engine(Settings(model=str(tiny_checkpoint), device="cpu", decode_streams=3, client_decode_streams=2))
    assert engine.load(), engine.error
    yield engine
    engine.unload()


@pytest.fixture(scope="module")
def server(engine):
    running = RunningServer(engine)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def codes():
    return np.random.default_rng(11).integers(0, 2048, size=(40, NUM_CODEBOOKS))


@pytest.fixture(scope="module")
def whole(engine, codes):
    return engine.decode(codes).samples


def wait_free(engine, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while engine.streams.in_use:
        assert time.monotonic() < deadline, "a closed socket kept its stream"
        time.sleep(0.05)


def test_float32_stream_equals_the_whole_decode_and_a_second_utterance_follows(server, engine, codes, whole):
    with StreamClient(server.url, format="float32") as client:
        assert client.sample_rate == 24_000 and client.samples_per_frame == 1920
        parts = [client.push(codes[low : low + 4]) for low in range(0, len(codes), 4)]
        parts.append(client.end())
        assert client.done["frames"] == len(codes)
        assert snr_db(np.concatenate(parts), whole) >= MIN_SNR_DB
        again = np.concatenate([client.push(codes[:7]), client.push(codes[7:]), client.end()])
        assert snr_db(again, whole) >= MIN_SNR_DB  # the end message started a fresh utterance
    wait_free(engine)


def test_pcm16_and_json_frames(server, engine, codes, whole):
    with StreamClient(server.url) as client:
        client.send_raw(json.dumps({"codes": codes[:3].tolist()}))
        first = client.read_audio()
        rest = client.push(codes[3:])
        got = np.concatenate([first, rest, client.end()])
    expected = np.round(np.clip(whole, -1, 1) * 32767) / 32767
    assert np.max(np.abs(got - expected)) <= 1.5 / 32767
    wait_free(engine)


BAD = [
    (np.full((2, NUM_CODEBOOKS), 2048, "<i2").tobytes(), "2047"),
    (np.full((2, NUM_CODEBOOKS), -1, "<i2").tobytes(), "cannot be decoded"),
    (b"\x00" * 30, "32 bytes a frame"),
    (json.dumps({"codes": [[1] * 15]}), "list of 16"),
    (json.dumps({"codes": [[1.5] * 16]}), "integers"),
    ("[" * 50_000, "JSON"),
    ("not json", "JSON"),
    (np.zeros((decode_socket.MAX_FRAMES_PER_MESSAGE + 1, NUM_CODEBOOKS), "<i2").tobytes(), "at most 125 frames"),
]


@pytest.mark.parametrize(("message", "said"), BAD, ids=[said for _, said in BAD])
def test_a_bad_message_gets_a_sentence_and_the_other_stream_goes_on(server, engine, codes, whole, message, said):
    with StreamClient(server.url, format="float32") as good, StreamClient(server.url) as bad:
        first = good.push(codes[:5])
        bad.send_raw(message)
        with pytest.raises(StreamClientError, match=said):
            bad.read_audio()
        rest = good.push(codes[5:])
        assert snr_db(np.concatenate([first, rest, good.end()]), whole) >= MIN_SNR_DB
    wait_free(engine)


def test_limits_per_client_and_on_the_server(server, engine):
    a, b = StreamClient(server.url), StreamClient(server.url)
    try:
        with pytest.raises(StreamClientError, match="--client-decode-streams 2"):
            StreamClient(server.url)
    finally:
        a.close()
        b.close()
    wait_free(engine)
    engine.streams.close_all()
    held = [engine.stream_decoder() for _ in range(engine.streams.limit)]  # the server is full
    try:
        with pytest.raises(StreamClientError, match="3 of 3 streams"):
            StreamClient(server.url)
    finally:
        for decoder in held:
            decoder.close()
    with StreamClient(server.url) as client:  # and serves again
        assert client.push(np.zeros((1, NUM_CODEBOOKS), np.int64)).size == client.samples_per_frame
    wait_free(engine)


def test_a_browser_page_and_a_bad_format_are_refused(server, engine):
    with pytest.raises(StreamClientError, match="HTTP 403|code 4403"):
        StreamClient(server.url, origin="http://evil.example")
    with pytest.raises(StreamClientError, match="format must be"):
        StreamClient(server.url + "?format=mp3")
    wait_free(engine)


def test_a_client_that_never_reads_is_closed(server, engine, monkeypatch, codes):
    monkeypatch.setattr(decode_socket, "SEND_TIMEOUT_S", 1.0)
    client = StreamClient(server.url, format="float32")
    client.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    frame = codes[:8].astype("<i2").tobytes()
    deadline = time.monotonic() + 60
    try:
        while engine.streams.in_use and time.monotonic() < deadline:
            try:
                client.sock.settimeout(0.2)
                client.send_raw(frame)  # 8 frames in, 61 KB of audio out that nobody reads
            except OSError:
                time.sleep(0.1)  # its own socket is full too: the server stopped reading it
    finally:
        client.sock.close()
    assert engine.streams.in_use == 0, "the server kept a stream whose client never reads"
    with StreamClient(server.url) as other:
        assert other.push(codes[:1]).size == other.samples_per_frame
    wait_free(engine)


def test_the_docs_example_runs(server, engine, codes, whole, tmp_path, monkeypatch):
    """docs/stream-decode.md's client example, run as written against serve-decode (its address and
    token file swapped for this test's)."""
    import re
    from pathlib import Path

    from core.codec import SAMPLES_PER_FRAME
    from core.tokens import make_token_file, save_tokens

    doc = (Path(__file__).resolve().parents[3] / "docs" / "stream-decode.md").read_text(encoding="utf-8")
    example = next(b for b in re.findall(r"```python\n(.*?)```", doc, re.S) if "StreamClient" in b)
    save_tokens(make_token_file(codes, len(codes) * SAMPLES_PER_FRAME, "test"), tmp_path / "speech.npz")
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(example.replace("ws://127.0.0.1:8765/decode/ws", server.url), scope)  # noqa: S102 - the docs' own code
    assert snr_db(np.concatenate(scope["audio"]), whole) >= MIN_SNR_DB
    wait_free(engine)
