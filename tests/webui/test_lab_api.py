"""/timeline, /ladder and /token_usage through gradio_client on a live server, with a bad file on each
(the server keeps working after)."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf
from gradio_client import handle_file
from gradio_client.exceptions import AppError


@pytest.fixture
def two_clips(tmp_path, speech):
    x = speech(2.0, seed=3)
    y = x.copy()
    y[24_000 : 24_000 + 2400] = 0.0  # a 100 ms dropout at 1.0 s
    paths = tmp_path / "a.wav", tmp_path / "b.wav"
    sf.write(paths[0], x, 24_000, subtype="FLOAT")
    sf.write(paths[1], y, 24_000, subtype="FLOAT")
    return paths


def test_lab_endpoints_are_named(client):
    names = set(client.view_api(return_format="dict", print_info=False)["named_endpoints"])
    assert {"/timeline", "/ladder", "/token_usage"} <= names


def test_timeline_finds_the_dropout_and_a_bad_file_is_refused(client, two_clips, bad_audio):
    value, timeline = client.predict(
        handle_file(str(two_clips[0])), handle_file(str(two_clips[1])), api_name="/timeline"
    )
    assert abs(timeline["worst"][0]["time_s"] - 1.05) <= 0.3
    assert '"residual"' in value
    with pytest.raises(AppError, match="not_audio.wav"):
        client.predict(handle_file(str(bad_audio)), handle_file(str(two_clips[1])), api_name="/timeline")
    assert client.predict(api_name="/status")[1]["engine"]["state"] == "ready"


def test_ladder_levels_and_a_bad_file_is_refused(client, two_clips, bad_audio):
    _value, gallery, table, details = client.predict(
        handle_file(str(two_clips[0])), [], ["2", "16"], api_name="/ladder"
    )
    assert [row["codebooks"] for row in details["levels"]] == [2, 16]
    assert [row["bitrate_bps"] for row in details["levels"]] == [275.0, 2200.0]
    assert gallery.count("<img ") == 3 and "| 2 | 275 |" in table  # the original, then k = 2 and k = 16
    level16 = sf.read(details["levels"][1]["wav"], dtype="float32")[0]
    assert level16.shape == (48_000,) and np.isfinite(level16).all()
    with pytest.raises(AppError, match="not_audio.wav"):
        client.predict(handle_file(str(bad_audio)), [], ["1"], api_name="/ladder")
    with pytest.raises(AppError, match="1 to 16"):
        client.predict(handle_file(str(two_clips[0])), [], [], api_name="/ladder")
    assert client.predict(api_name="/status")[1]["engine"]["state"] == "ready"


def test_token_usage_of_an_uploaded_file_and_a_bad_one(client, tabs, clip, bad_tokens):
    token_path = tabs.encode.encode(str(clip))[0]
    table, _png, details = client.predict([handle_file(token_path)], 2, api_name="/token_usage")
    assert len(details["codebooks"]) == 16 and "| 2 |" in table
    with pytest.raises(AppError, match="not a token file"):
        client.predict([handle_file(str(bad_tokens))], 1, api_name="/token_usage")


def test_the_player_can_fetch_a_region_of_a_source_by_byte_range(client, server, two_clips):
    """What the flip player does for long clips: the file route answers a Range request with only
    those bytes (206), so a region is loaded without the rest of the file."""
    import json
    import urllib.request

    value, _timeline = client.predict(
        handle_file(str(two_clips[0])), handle_file(str(two_clips[1])), api_name="/timeline"
    )
    residual = next(s["path"] for s in json.loads(value)["sources"] if s["id"] == "residual")
    request = urllib.request.Request(server[0] + "gradio_api/file=" + residual, headers={"Range": "bytes=1000-1999"})
    with urllib.request.urlopen(request, timeout=30) as response:
        body = response.read()
        assert response.status == 206 and len(body) == 1000
    with open(residual, "rb") as f:
        f.seek(1000)
        assert body == f.read(1000)
