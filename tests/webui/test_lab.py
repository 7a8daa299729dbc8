"""The listening lab's handlers, called directly: the player's manifest (residual, loudness gains,
timeline), the codebook ladder end to end, token usage, and bad input on each."""

from __future__ import annotations

import json
import re
from pathlib import Path

import gradio as gr
import numpy as np
import pytest
import soundfile as sf

from core.audio import loudness
from webui.tabs.lab import LabHandlers


@pytest.fixture(scope="module")
def trip(engine, tmp_path_factory, speech):
    """One round trip of 3 s through the app's handlers: (handlers, original, reconstruction, downloads)."""
    from tests.webui.tab_handlers import Tabs
    from webui.serving.workspace import Workspace

    folder = tmp_path_factory.mktemp("lab")
    clip = folder / "speech 3s.wav"
    sf.write(clip, speech(3.0, seed=7), 24_000, subtype="PCM_16")
    tabs = Tabs.of(engine, Workspace(folder / "work"))
    out = tabs.roundtrip.roundtrip(str(clip))
    return LabHandlers(engine, tabs.workspace), out[0], out[1], out[6]


@pytest.fixture(scope="module")
def speech():
    from tests.conftest import speechlike

    return speechlike


def _read(path) -> np.ndarray:
    return sf.read(path, dtype="float32")[0]


def test_timeline_manifest_residual_gains_and_worst_moments(trip):
    lab, original, reconstruction, _ = trip
    manifest, value, timeline = lab.timeline(original, reconstruction, None)
    assert json.loads(value) == json.loads(json.dumps(manifest, allow_nan=False))
    by_id = {s["id"]: s for s in manifest["sources"]}
    assert list(by_id) == ["original", "reconstruction", "residual"]
    assert [s["key"] for s in manifest["sources"]] == ["a", "b", "r"]
    a, b, r = (_read(by_id[k]["path"]) for k in ("original", "reconstruction", "residual"))
    np.testing.assert_array_equal(r, a - b)  # sample-aligned, exact
    expected = loudness.matching_gain_db(loudness.integrated_lufs(a), loudness.integrated_lufs(b))
    assert by_id["reconstruction"]["gain_db"] == pytest.approx(expected, abs=0.01)
    assert by_id["original"]["gain_db"] == 0.0 and by_id["residual"]["gain_db"] == 0.0
    assert manifest["duration_s"] == pytest.approx(3.0)
    assert 1 <= len(timeline["worst"]) <= 3 and timeline["resolution_s"] <= 0.1
    assert all(0 <= m["time_s"] <= 3.0 for m in timeline["worst"])
    assert len(manifest["envelope"]["max"]) <= 2000
    # each source carries its own waveform: the player draws the one that plays
    assert by_id["original"]["envelope"] == manifest["envelope"]
    assert max(by_id["residual"]["envelope"]["max"]) != max(by_id["original"]["envelope"]["max"])
    assert manifest["ui"]["play"] == "Play"
    assert Path(by_id["residual"]["path"]).parent != Path(original).parent  # its own request folder


def test_ladder_k16_is_the_reconstruction_and_k1_is_not(trip):
    lab, original, reconstruction, downloads = trip
    manifest = lab.timeline(original, reconstruction, None)[0]
    state, value, gallery, table, details = lab.ladder(original, downloads, ["16", "1"], manifest, None)
    ids = [s["id"] for s in state["sources"]]
    assert ids == ["original", "reconstruction", "residual", "k1", "k16"]
    paths = {s["id"]: s["path"] for s in state["sources"]}
    np.testing.assert_array_equal(_read(paths["k16"]), _read(reconstruction))
    assert not np.array_equal(_read(paths["k1"]), _read(reconstruction))
    assert [row["bitrate_bps"] for row in details["levels"]] == [137.5, 2200.0]
    pictures = re.findall(r"src='gradio_api/file=([^']+)'", gallery)  # the original, then each level
    assert len(pictures) == 3 and all(Path(p).read_bytes()[:4] == b"\x89PNG" for p in pictures)
    assert gallery.count("height='160'") == 3 and gallery.count("class='cw-spec-y'") == 3  # natural height, kHz axis
    assert [c for c in re.findall(r"<figcaption>([^<]+)</figcaption>", gallery)] == [
        "Original",
        "k = 1 · 137.5 bit/s",
        "k = 16 · 2200 bit/s",
    ]
    assert "| 1 | 137.5 |" in table and "| 16 | 2200 |" in table
    assert json.loads(value)["sources"][3]["key"] == "1"
    assert details["timing"]["ui_s"] >= 0 and details["timing"]["model_s"] > 0


def test_ladder_without_a_token_file_encodes_the_clip_again(trip):
    lab, original, reconstruction, _ = trip
    state, *_ = lab.ladder(original, None, ["16"], None, None)
    assert [s["id"] for s in state["sources"]] == ["original", "k16"]
    np.testing.assert_array_equal(_read(state["sources"][1]["path"]), _read(reconstruction))


def test_ladder_refuses_a_token_file_of_another_clip_and_bad_levels(trip, engine, tmp_path):
    from core.tokens import make_token_file, save_tokens

    lab, original, _, _ = trip
    other = save_tokens(make_token_file(np.zeros((10, 16), dtype=np.int64), 19_000, "x"), tmp_path / "o.npz")
    with pytest.raises(gr.Error, match="different clips"):
        lab.ladder(original, [str(other)], ["1"], None, None)
    with pytest.raises(gr.Error, match="1 to 16"):
        lab.ladder(original, None, [], None, None)
    with pytest.raises(gr.Error, match="upload or record audio"):
        lab.ladder(None, None, ["1"], None, None)


def test_bad_audio_on_timeline_and_ladder(trip, bad_audio):
    lab, original, _, _ = trip
    for call in (
        lambda: lab.timeline(str(bad_audio), original, None),
        lambda: lab.ladder(str(bad_audio), None, ["1"], None, None),
    ):
        with pytest.raises(gr.Error) as info:
            call()
        assert "not_audio.wav" in str(info.value)


def test_token_usage_from_the_round_trip_and_a_chosen_codebook(trip):
    lab, *_, downloads = trip
    table, png, details = lab.token_usage(downloads, 3, None)
    rows = details["codebooks"]
    assert [r["codebook"] for r in rows] == list(range(1, 17))
    assert all(1 <= r["used"] <= 38 and 0 <= r["entropy_bits"] <= np.log2(38) + 1e-6 for r in rows)  # 38 frames
    assert table.count("\n| ") == 16 and Path(png).read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(gr.Error, match="1 to 16"):
        lab.token_usage(downloads, 17, None)
    with pytest.raises(gr.Error, match="No token file"):
        lab.token_usage(None, 1, None)


def test_token_usage_of_a_bad_token_file(trip, bad_tokens):
    lab = trip[0]
    with pytest.raises(gr.Error, match="not a token file"):
        lab.token_usage(str(bad_tokens), 1, None)
