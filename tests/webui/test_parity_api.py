"""/parity_decode, /parity_encode and /precision_sweep through gradio_client on a live server; bad input
is refused with its sentence and the server keeps working."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf
from gradio_client import handle_file
from gradio_client.exceptions import AppError

from core.codec import SAMPLE_RATE
from tests.conftest import speechlike

pytestmark = pytest.mark.slow  # a live server, the sweep included


@pytest.fixture(scope="module")
def files(engine, tmp_path_factory):
    folder = tmp_path_factory.mktemp("api")
    x = speechlike(2.0, seed=9)
    codes = engine.encode_array(x).codes
    np.save(folder / "codes.npy", codes)
    shifted = np.concatenate([np.zeros(37, np.float32), engine.decode(codes).samples])
    sf.write(folder / "theirs.wav", shifted, SAMPLE_RATE, subtype="FLOAT")
    sf.write(folder / "clip.wav", x, SAMPLE_RATE, subtype="FLOAT")
    np.save(folder / "bad.npy", np.zeros((10, 7), np.int64))
    return folder


def test_the_endpoints_are_named(client):
    names = set(client.view_api(return_format="dict", print_info=False)["named_endpoints"])
    assert {"/parity_decode", "/parity_encode", "/precision_sweep"} <= names


def test_parity_decode_finds_the_offset_and_refuses_bad_codes(client, files):
    verdict, _curve, _measures, report, details = client.predict(
        handle_file(str(files / "codes.npy")), handle_file(str(files / "theirs.wav")), api_name="/parity_decode"
    )
    assert "Identical to the reference decode." in verdict and "shifted by 37 samples" in verdict
    assert details["alignment"]["offset_samples"] == 37 and report.endswith("theirs_parity.html")
    with pytest.raises(AppError, match=r"has shape \(10, 7\); codes must be frames × 16"):
        client.predict(
            handle_file(str(files / "bad.npy")), handle_file(str(files / "theirs.wav")), api_name="/parity_decode"
        )
    assert client.predict(api_name="/status")[1]["engine"]["state"] == "ready"


def test_parity_encode_and_precision(client, files):
    text, details = client.predict(
        handle_file(str(files / "clip.wav")), handle_file(str(files / "codes.npy")), api_name="/parity_encode"
    )
    assert details["identical"] and "Their codes equal the reference encode" in text
    table, sweep = client.predict(handle_file(str(files / "clip.wav")), api_name="/precision_sweep")
    assert [r["precision"] for r in sweep["rows"]] == ["float32", "bfloat16", "float16"]
    assert "fp16" in table and sweep["random_weights"]
