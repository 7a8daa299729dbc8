"""/parity_stream (the Check a port tab's stream check) through gradio_client on the running app: the
workbench's own stream is "ok", the same stream with a 40 ms gap "failed" with the gap measured, in
English and in Chinese; a packet size out of range is one sentence and the server keeps working."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf
from gradio_client import Client, handle_file
from gradio_client.exceptions import AppError

from core.codec import SAMPLE_RATE


@pytest.fixture(scope="module")
def files(engine, tmp_path_factory):
    folder = tmp_path_factory.mktemp("stream-api")
    codes = np.random.default_rng(8).integers(0, 2048, size=(30, 16))
    np.save(folder / "codes.npy", codes)
    with engine.stream_decoder() as decoder:
        ours = np.concatenate([decoder.push(codes[low : low + 4]) for low in range(0, 30, 4)])
    sf.write(folder / "ours.wav", ours, SAMPLE_RATE, subtype="PCM_16")
    at = 20_000
    assert np.sqrt(np.mean(ours[at : at + 960] ** 2)) > 1e-3
    sf.write(folder / "gap.wav", np.concatenate([ours[:at], np.zeros(960, np.float32), ours[at:]]), SAMPLE_RATE)
    return folder


def _check(client, files, wav: str, packet=4):
    return client.predict(
        handle_file(str(files / "codes.npy")), handle_file(str(files / wav)), packet, api_name="/parity_stream"
    )


def test_our_stream_is_ok_and_a_gap_fails(client, files):
    text, _measures, details = _check(client, files, "ours.wav")
    assert details["verdict"] == "ok" and "**ok**: The stream equals the whole decode" in text
    text, measures, details = _check(client, files, "gap.wav")
    assert details["verdict"] == "failed" and details["likely_cause"] == "gaps"
    assert "**failed**: 1 gap(s) of inserted silence (40 ms in all; the first at 0.83 s)" in text
    assert "| 0.833 | 40 |" in measures  # the gaps table


def test_the_check_speaks_chinese(server, files):
    zh = Client(server[0], verbose=False, headers={"Accept-Language": "zh-CN,zh;q=0.9"})
    text, measures, details = _check(zh, files, "gap.wav")
    assert details["verdict"] == "failed" and "**未通过**" in text and "插入的静音空隙" in text
    assert "长度漂移" in measures


def test_a_bad_packet_size_is_a_sentence(client, files):
    with pytest.raises(AppError, match="less than minimum value 1|Give 1 to 125 frames per packet"):
        _check(client, files, "ours.wav", packet=0)
    assert client.predict(api_name="/status")[1]["engine"]["state"] == "ready"
