"""The shareable report: the zip holds everything, and the HTML plays offline in a real browser."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from core import tokens
from core.audio.files import audio_from_array, write_wav
from core.judging import report, verdict
from core.settings import AudioLimits

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="module")
def made(tiny_engine, tmp_path_factory):
    from tests.conftest import speechlike

    folder = tmp_path_factory.mktemp("report")
    samples = speechlike(1.5)
    result = tiny_engine.roundtrip(audio_from_array(samples, 24_000))
    original = write_wav(folder / "clip_24k_mono.wav", samples)
    reconstruction = write_wav(folder / "clip_reconstruction.wav", result.decoded.samples)
    token_file = tokens.save_tokens(
        tokens.make_token_file(result.encoded.codes, samples.size, "tiny"), folder / "clip_tokens.npz"
    )
    metrics = [
        {"name": "PESQ-WB", "value": 1.2, "unit": "", "better": "higher", "note": ""},
        {"name": "STOI", "value": None, "unit": "", "better": "higher", "note": "could not be computed"},
    ]
    judged = verdict.combine({"PESQ-WB": 1.2}, 3.9, 1.4, random_weights=True).to_dict()
    timings = {"encode_s": result.encoded.seconds, "decode_s": result.decoded.seconds}
    zip_path, html_path = report.build_roundtrip_report(
        folder,
        "clip",
        original,
        reconstruction,
        token_file,
        metrics,
        judged,
        tiny_engine.info(),
        timings,
        AudioLimits(),
    )
    return zip_path, html_path, judged


def test_zip_holds_audio_tokens_pictures_metrics_and_environment(made):
    zip_path, _html, _verdict = made
    with zipfile.ZipFile(zip_path) as z:
        names = set(z.namelist())
        summary = json.loads(z.read("metrics.json"))
        z.extract("clip_tokens.npz", zip_path.parent / "unzipped")
    assert {
        "clip_24k_mono.wav",
        "clip_reconstruction.wav",
        "clip_tokens.npz",
        "clip_spectrograms.png",
        "clip_token_usage.png",
        "metrics.json",
        "report.html",
    } <= names
    assert tokens.load_tokens(zip_path.parent / "unzipped" / "clip_tokens.npz").frames == 19
    assert summary["verdict"]["level"] == "red" and summary["verdict"]["caveat"] == verdict.RANDOM_CAVEAT
    env = summary["environment"]
    assert env["device"] == "cpu" and env["dtype"] == "float32" and env["random_weights"] is True
    assert env["versions"]["torch"] and env["versions"]["distillmos"] == "0.9.1"
    assert env["timings_s"]["decode_s"] > 0
    assert [m["name"] for m in summary["metrics"]] == ["PESQ-WB", "STOI"]


def test_report_files_are_never_overwritten(made, tiny_engine):
    zip_path, _html, _ = made
    folder = zip_path.parent
    with pytest.raises(FileExistsError):
        report.build_roundtrip_report(
            folder,
            "clip",
            folder / "clip_24k_mono.wav",
            folder / "clip_reconstruction.wav",
            folder / "clip_tokens.npz",
            [],
            None,
            tiny_engine.info(),
            {},
            AudioLimits(),
        )


@pytest.mark.browser
def test_html_report_opens_offline_and_its_players_play(made, tmp_path):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    _zip, html_path, _ = made
    copy = tmp_path / "alone" / "report.html"  # alone in a folder: everything must be inside it
    copy.parent.mkdir()
    copy.write_bytes(html_path.read_bytes())
    requests = []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--autoplay-policy=no-user-gesture-required"]
        )
        context = browser.new_context(offline=True)
        page = context.new_page()
        page.on("request", lambda r: requests.append(r.url))
        page.goto(copy.as_uri())
        played = page.evaluate("""async () => {
            const out = [];
            for (const a of document.querySelectorAll('audio')) {
                a.muted = true;
                await a.play();
                await new Promise(r => setTimeout(r, 400));
                out.push({id: a.id, duration: a.duration, time: a.currentTime, error: a.error && a.error.code});
                a.pause();
            }
            return out;
        }""")
        images = page.evaluate("[...document.images].map(i => i.naturalWidth)")
        text = page.inner_text("body")
        browser.close()
    assert [p["id"] for p in played] == ["original", "reconstruction"]
    for player in played:
        assert player["error"] is None and player["duration"] == pytest.approx(1.5, abs=0.01) and player["time"] > 0
    assert len(images) == 2 and min(images) > 100
    assert "random weights" in text and "Badly degraded" in text
    assert all(url.startswith(("file:", "data:")) for url in requests)
