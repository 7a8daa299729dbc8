"""The comparison through the page's handlers (no browser): the round trip makes the chosen anchors
with real encoders, the player's manifest carries them loudness-matched with a residual each, the
one table has a column per source, a second checkpoint is one more source, and paths a client
hands back are believed only inside the request folders."""

from __future__ import annotations

import json
from pathlib import Path

import gradio as gr
import numpy as np
import pytest
import soundfile as sf

from core.audio import loudness
from core.model import second
from core.model.engine import Engine
from core.settings import Settings
from tests.webui.tab_handlers import Tabs
from webui.serving.workspace import Workspace
from webui.tabs.compare import CompareHandlers
from webui.tabs.lab import LabHandlers

ZH = gr.Request(headers={"accept-language": "zh-CN,zh;q=0.9"})
EN = gr.Request(headers={"accept-language": "en-US,en;q=0.9"})
SPEECH = Path(__file__).resolve().parents[2] / "webui" / "assets" / "speech_male_24k.wav"


def _trip(tabs: Tabs, clip: Path, anchors, with_second=False, request=EN):
    out = tabs.roundtrip.roundtrip(str(clip), request, anchors, with_second)
    lab = LabHandlers(tabs.engine, tabs.workspace)
    manifest, value, _timeline = lab.timeline(out.original, out.reconstruction, request, out.details)
    return out, manifest, value


def _table(tabs: Tabs, out, value, request=EN):
    handlers = CompareHandlers(tabs.engine, tabs.workspace)
    return list(handlers.table(out.original, out.reconstruction, value, request))


@pytest.fixture(scope="module")
def speech_trip(engine, tmp_path_factory):
    """3 s of the recorded speech through the codec, Opus 6, AMR and the 3.5 kHz low-pass."""
    folder = tmp_path_factory.mktemp("work")
    clip = folder / "speech 3s.wav"
    sf.write(clip, sf.read(SPEECH, dtype="float32")[0][: 3 * 24_000], 24_000, subtype="FLOAT")
    tabs = Tabs.of(engine, Workspace(folder / "requests"))
    out, manifest, value = _trip(tabs, clip, ["opus6", "amr", "lp3.5"])
    return tabs, out, manifest, value


def test_the_round_trip_makes_the_chosen_anchors(speech_trip):
    tabs, out, _manifest, _value = speech_trip
    compare = out.details["compare"]
    assert [s["id"] for s in compare["sources"]] == ["lp3.5", "amr", "opus6"] and compare["problems"] == []
    root = tabs.workspace.root.resolve()
    for source in compare["sources"]:
        path = Path(source["wav"])
        assert path.is_file() and path.resolve().is_relative_to(root)
        assert sf.info(path).frames == sf.info(out.original).frames  # aligned, as long as the original
    opus = next(s for s in compare["sources"] if s["id"] == "opus6")
    assert opus["kind"] == "anchor" and abs(opus["bitrate_bps"] - 6000) < 600 and opus["key"] == "o"
    assert out.details["timing"]["anchors_s"] > 0


def test_the_manifest_has_every_anchor_loudness_matched_with_its_own_key_and_residual(speech_trip):
    _tabs, out, manifest, _value = speech_trip
    by_id = {s["id"]: s for s in manifest["sources"]}
    assert list(by_id)[:3] == ["original", "reconstruction", "residual"]
    assert by_id["opus6"]["label"] == "Opus 6 kbit/s" and by_id["amr"]["label"] == "Phone call (AMR-NB 12.2 kbit/s)"
    keys = [s["key"] for s in manifest["sources"] if s["key"]]
    assert len(keys) == len(set(keys))  # one key each
    reference = loudness.integrated_lufs(sf.read(out.original, dtype="float32")[0])
    for anchor_id in ("lp3.5", "amr", "opus6"):
        source = by_id[anchor_id]
        samples = sf.read(source["path"], dtype="float32")[0]  # the manifest's sources: path
        matched = loudness.integrated_lufs(samples * np.float32(10 ** (source["gain_db"] / 20)))
        assert abs(matched - reference) <= 0.5, (anchor_id, matched, reference)
        residual = sf.read(manifest["residuals"][anchor_id], dtype="float32")[0]
        original = sf.read(out.original, dtype="float32")[0]
        assert np.allclose(residual, original - samples, atol=1e-6)  # R against this anchor
    assert manifest["residual_of"] == "reconstruction" and "reconstruction" in manifest["residuals"]


def test_the_player_labels_are_in_the_readers_language(speech_trip):
    tabs, out, _manifest, _value = speech_trip
    lab = LabHandlers(tabs.engine, tabs.workspace)
    manifest = lab.timeline(out.original, out.reconstruction, ZH, out.details)[0]
    labels = {s["id"]: s["label"] for s in manifest["sources"]}
    assert labels["amr"].startswith("电话") and labels["lp3.5"] == "低通 3.5 kHz"
    assert "{source}" in manifest["ui"]["residual_of"] and "残差" in manifest["ui"]["residual_of"]


def test_one_table_with_a_column_per_source_and_the_codec_placed_among_them(speech_trip):
    tabs, out, _manifest, value = speech_trip
    (fast_md, _p1, fast), (md, placing_md, details) = _table(tabs, out, value)
    ids = [c["source"]["id"] for c in details["table"]["columns"]]
    assert ids == ["original", "reconstruction", "lp3.5", "amr", "opus6"]
    assert all(c["values"]["DistillMOS"] is None for c in fast["table"]["columns"])  # first: the fast metrics
    assert "DistillMOS" in fast_md
    columns = {c["source"]["id"]: c["values"] for c in details["table"]["columns"]}
    for sid in ("reconstruction", "amr", "opus6", "lp3.5"):
        for row in ("PESQ-WB", "STOI", "SI-SDR", "Log-mel distance", "DistillMOS"):
            assert columns[sid][row] is not None, (sid, row)
    assert columns["original"]["DistillMOS"] is not None and columns["original"]["PESQ-WB"] is None
    assert columns["reconstruction"]["Bitrate"] == 2200.0 and columns["lp3.5"]["Bitrate"] is None
    assert "| Opus 6 kbit/s |" in md and "Phone call (AMR-NB 12.2 kbit/s)" in md
    placed = {p["source_id"]: p for p in details["placing"]["placements"]}
    assert set(placed) <= {"lp3.5", "amr", "opus6"} and placed
    for p in placed.values():  # every word comes from this clip's numbers
        for metric in p["better"]:
            a, b = columns["reconstruction"][metric], columns[p["source_id"]][metric]
            assert (a < b) if metric == "Log-mel distance" else (a > b)
    assert "random weights" in placing_md  # the tiny checkpoint: the caveat stays


def test_a_clip_too_short_for_the_encoders_gives_a_message_and_the_other_sources(engine, tmp_path):
    """0.5 s: the codec takes it (it refuses under 80 ms), the codec anchors need 1 s (50 ms: tests/core/anchors)."""
    tabs = Tabs.of(engine, Workspace(tmp_path / "work"))
    clip = tmp_path / "short.wav"
    sf.write(clip, sf.read(SPEECH, dtype="float32")[0][24_000:36_000], 24_000, subtype="FLOAT")
    out, manifest, _value = _trip(tabs, clip, ["lp3.5", "opus6", "amr"])
    compare = out.details["compare"]
    assert [s["id"] for s in compare["sources"]] == ["lp3.5"]
    assert {p["id"]: p["reason"] for p in compare["problems"]} == {"amr": "too_short", "opus6": "too_short"}
    problems_md, agreement_md = CompareHandlers(tabs.engine, tabs.workspace).problems(out.details, EN)
    assert "Opus 6 kbit/s was left out" in problems_md and "0.50 s" in problems_md and agreement_md == ""
    assert "需要" in CompareHandlers(tabs.engine, tabs.workspace).problems(out.details, ZH)[0]
    assert {s["id"] for s in manifest["sources"]} == {"original", "reconstruction", "residual", "lp3.5"}


def test_a_path_from_outside_the_request_folders_is_refused(speech_trip, tmp_path):
    tabs, out, _manifest, value = speech_trip
    outside = tmp_path / "elsewhere.wav"
    sf.write(outside, np.zeros(24_000, np.float32), 24_000)
    forged = json.loads(value)
    forged["sources"].append({"id": "x", "kind": "anchor", "label": "x", "key": "x", "wav": str(outside)})
    with pytest.raises(gr.Error, match="not a file this server wrote"):
        _table(tabs, out, json.dumps(forged))
    dotted = dict(forged, sources=[{"id": "y", "kind": "anchor", "wav": str(tabs.workspace.root / ".." / "x.wav")}])
    with pytest.raises(gr.Error, match="not a file this server wrote"):
        _table(tabs, out, dotted)


@pytest.mark.slow  # a second engine and model load, two round trips and the table with DistillMOS
def test_a_second_checkpoint_is_one_more_source(tiny_checkpoint, second_checkpoint, tmp_path, speech):
    engine = Engine(Settings(model=str(tiny_checkpoint), device="cpu", anchors="none"))
    assert engine.load()
    assert second.load_second(engine, str(second_checkpoint)).ready
    tabs = Tabs.of(engine, Workspace(tmp_path / "work"))
    clip = tmp_path / "clip.wav"
    sf.write(clip, speech(1.5), 24_000)
    out, manifest, value = _trip(tabs, clip, [], with_second=True)
    compare = out.details["compare"]
    (source,) = compare["sources"]
    assert source["id"] == "compare" and source["kind"] == "checkpoint" and source["key"] == "c"
    first = sf.read(out.reconstruction, dtype="float32")[0]
    assert not np.allclose(sf.read(source["wav"], dtype="float32")[0], first)  # its own audio
    assert len(compare["agreement"]) == 16 and min(r["equal_share"] for r in compare["agreement"]) < 0.5
    assert Path(compare["token_file"]).is_file()
    assert any(s["id"] == "compare" for s in manifest["sources"])
    details = _table(tabs, out, value)[-1][2]
    assert [c["source"]["id"] for c in details["table"]["columns"]] == ["original", "reconstruction", "compare"]
    assert "| 1 | 2 |" in CompareHandlers(tabs.engine, tabs.workspace).problems(out.details, EN)[1]
    # and without it ticked, only the codec
    assert tabs.roundtrip.roundtrip(str(clip), EN, [], False).details["compare"]["sources"] == []


def test_the_report_carries_every_source_and_the_table(speech_trip):
    import zipfile

    from webui.tabs.review import ReviewHandlers

    tabs, out, _manifest, value = speech_trip
    comparison = _table(tabs, out, value)[-1][2]
    reviewer = ReviewHandlers(tabs.engine, tabs.workspace)
    zip_path, html_path = map(
        Path, reviewer.report(out.original, out.reconstruction, out.downloads, out.details, None, None, EN, comparison)
    )
    with zipfile.ZipFile(zip_path) as z:
        names = z.namelist()
        summary = json.loads(z.read("metrics.json"))
    for anchor_id in ("lp3.5", "amr", "opus6"):
        assert any(n.endswith(f"_{anchor_id}.wav") for n in names), names
    assert [s["id"] for s in summary["sources"]] == ["lp3.5", "amr", "opus6"]
    assert [c["source"]["id"] for c in summary["comparison"]["table"]["columns"]][:2] == ["original", "reconstruction"]
    page = html_path.read_text()
    assert page.count("<audio") == 2 + 3 and 'id="source-opus6"' in page
    assert "Every source side by side" in page and "<th>Opus 6 kbit/s</th>" in page
    assert "Where the codec stands: on this clip it is" in page  # the placing, in the reader's language


def test_two_quick_ticks_arriving_in_either_order_both_land_and_an_untick_drops_one(engine, tmp_path):
    """Two boxes ticked 0.3 s apart send two requests made from the same result on screen; they may
    reach the server in either order. The later request must not undo the earlier one (before, the
    box ticked second showed ticked but never reached the player when its request was handled first)."""
    clip = tmp_path / "speech.wav"
    sf.write(clip, sf.read(SPEECH, dtype="float32")[0][: 2 * 24_000], 24_000, subtype="FLOAT")
    tabs = Tabs.of(engine, Workspace(tmp_path / "requests"))
    out = tabs.roundtrip.roundtrip(str(clip), EN, ["lp3.5"], False)
    handlers = CompareHandlers(tabs.engine, tabs.workspace)

    def ids(details):
        return [s["id"] for s in details["compare"]["sources"]]

    second = handlers.add_anchors(out.original, out.reconstruction, ["lp3.5", "mp3", "lp7"], out.details, EN)
    first = handlers.add_anchors(out.original, out.reconstruction, ["lp3.5", "mp3"], out.details, EN)
    assert sorted(ids(second)) == sorted(ids(first)) == ["lp3.5", "lp7", "mp3"], (ids(second), ids(first))
    unticked = handlers.add_anchors(out.original, out.reconstruction, ["lp3.5", "mp3"], first, EN)
    assert sorted(ids(unticked)) == ["lp3.5", "mp3"]
    behind = handlers.add_anchors(out.original, out.reconstruction, ["lp3.5", "mp3"], out.details, EN)
    assert sorted(ids(behind)) == ["lp3.5", "mp3"]  # a page behind the result catches up, nothing made again
