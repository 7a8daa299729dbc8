"""A 48 kHz decoder on the page (handlers, no browser; and one round trip through gradio_client): a 44.1 kHz
clip through the tiny 48 kHz recipe with the tiny 24 kHz base as the second checkpoint. The reconstruction is
48 kHz of the clip's duration, every source plays and is measured at 48 kHz, the original keeps its band above
12 kHz, the verdict card names both decoders' rates, the token file says which decoder made it."""

from __future__ import annotations

import html
from pathlib import Path

import gradio as gr
import numpy as np
import pytest
import soundfile as sf

from core.model import second
from core.model.engine import Engine
from core.settings import Settings
from core.tokens import load_tokens
from tests.webui.tab_handlers import Tabs
from webui.serving.workspace import Workspace
from webui.tabs.compare import CompareHandlers
from webui.tabs.lab import LabHandlers
from webui.tabs.review import ReviewHandlers

EN = gr.Request(headers={"accept-language": "en-US,en;q=0.9"})
ZH = gr.Request(headers={"accept-language": "zh-CN,zh;q=0.9"})


def clip_44k(path: Path, seconds: float = 2.0) -> Path:
    """Speech-like harmonics plus a 16 kHz tone: a band above 12 kHz that a 24 kHz reading loses."""
    from tests.conftest import speechlike

    t = np.arange(int(seconds * 44_100)) / 44_100
    low = np.interp(t, np.arange(int(seconds * 24_000)) / 24_000, speechlike(seconds, seed=4))
    x = (0.8 * low + 0.05 * np.sin(2 * np.pi * 16_000 * t)).astype(np.float32)
    sf.write(path, x, 44_100, subtype="PCM_16")
    return path


def band_share(x: np.ndarray, rate: int, above_hz: float = 13_000) -> float:
    spectrum = np.abs(np.fft.rfft(x)) ** 2
    freqs = np.fft.rfftfreq(x.size, 1 / rate)
    return float(spectrum[freqs > above_hz].sum() / max(spectrum.sum(), 1e-30))


@pytest.fixture(scope="module")
def engine48(tiny_checkpoint_48k, tiny_checkpoint):
    engine = Engine(Settings(model=str(tiny_checkpoint_48k), device="cpu", mos_windows=1))
    assert engine.load(), engine.error
    second.load_second(engine, str(tiny_checkpoint))
    assert engine.compare is not None and engine.compare.ready
    return engine


@pytest.fixture(scope="module")
def trip(engine48, tmp_path_factory):
    folder = tmp_path_factory.mktemp("family-page")
    tabs = Tabs.of(engine48, Workspace(folder / "requests"))
    clip = clip_44k(folder / "voice 44k.wav")
    out = tabs.roundtrip.roundtrip(str(clip), EN, ["lp3.5"], True)
    return tabs, clip, out


def test_the_reconstruction_is_48k_of_the_clips_duration_and_the_original_keeps_its_band(trip):
    _tabs, clip, out = trip
    reconstruction, rate = sf.read(out.reconstruction, dtype="float32")
    assert rate == 48_000 and reconstruction.size == round(sf.info(clip).duration * 48_000)
    original, original_rate = sf.read(out.original, dtype="float32")
    assert original_rate == 48_000 and original.size == reconstruction.size
    assert band_share(original, 48_000) > 1e-3  # the 16 kHz tone: read from the file, not from 24 kHz
    rates = out.details["rates"]
    assert rates == {
        "compared_at_hz": 48_000,
        "output_rate_hz": 48_000,
        "second_output_rate_hz": 24_000,
        "original_rate_hz": 44_100,
        "original_top_hz": 22_050.0,
    }
    sources = {s["id"]: s for s in out.details["compare"]["sources"]}
    assert sources["compare"]["made_at_hz"] == 24_000 and sf.info(sources["compare"]["wav"]).samplerate == 48_000
    token_file = next(f for f in out.downloads if f.endswith(".npz"))
    assert load_tokens(token_file).decoder_rate_hz == 48_000


def test_the_lab_plays_every_source_at_48k_with_a_residual_and_copies_at_their_rate(trip):
    tabs, _clip, out = trip
    lab = LabHandlers(tabs.engine, tabs.workspace)
    manifest, _value, _timeline = lab.timeline(out.original, out.reconstruction, EN, out.details)
    manifest = manifest if isinstance(manifest, dict) else manifest.value
    assert manifest["sample_rate"] == 48_000
    assert abs(manifest["duration_s"] - sf.info(out.reconstruction).duration) < 1e-3
    ids = [s["id"] for s in manifest["sources"]]
    assert ids[:3] == ["original", "reconstruction", "residual"] and {"compare", "lp3.5"} <= set(ids)
    residual, rate = sf.read(manifest["residuals"]["reconstruction"], dtype="float32")
    assert rate == 48_000 and residual.size == sf.info(out.reconstruction).frames
    copy = manifest["listen"][str(out.reconstruction)]
    assert copy["rate"] == 48_000 and copy["frames"] == sf.info(out.reconstruction).frames


def test_metrics_verdict_card_and_table_at_48k_name_both_rates(trip):
    tabs, _clip, out = trip
    _text, measured = tabs.roundtrip.metrics(out.original, out.reconstruction, EN, out.details)
    rows = {m["name"]: m for m in measured["metrics"]}
    assert rows["SI-SDR"]["rate_hz"] == 48_000 and rows["Log-mel distance"]["rate_hz"] == 48_000
    assert rows["PESQ-WB"]["rate_hz"] == 16_000 and rows["STOI"]["rate_hz"] == 10_000
    review = ReviewHandlers(tabs.engine, tabs.workspace)
    card, _v = review.verdict(out.original, out.reconstruction, measured, EN)
    card = html.unescape(card)
    assert "This checkpoint's decoder writes 48 kHz." in card
    assert "The second checkpoint's decoder writes 24 kHz." in card
    assert "compared and played at 48 kHz; the original holds up to 22.05 kHz" in card
    zh_card, _v = review.verdict(out.original, out.reconstruction, measured, ZH)
    assert "解码器输出 48 kHz" in zh_card and "第二个检查点的解码器输出 24 kHz" in zh_card
    lab = LabHandlers(tabs.engine, tabs.workspace)
    manifest, value, _t = lab.timeline(out.original, out.reconstruction, EN, out.details)
    table = list(CompareHandlers(tabs.engine, tabs.workspace).table(out.original, out.reconstruction, value, EN))
    assert any("SI-SDR" in str(part) for part in table)


def test_a_24k_clip_says_nothing_above_12k_can_be_compared(engine48, tmp_path, speech):
    tabs = Tabs.of(engine48, Workspace(tmp_path / "requests"))
    clip = tmp_path / "clip 24k.wav"
    sf.write(clip, speech(1.5), 24_000, subtype="PCM_16")
    out = tabs.roundtrip.roundtrip(str(clip), EN, [], False)
    assert out.details["rates"]["original_top_hz"] == 12_000.0
    _text, measured = tabs.roundtrip.metrics(out.original, out.reconstruction, EN, out.details)
    card, _v = ReviewHandlers(tabs.engine, tabs.workspace).verdict(out.original, out.reconstruction, measured, EN)
    assert "nothing above 12 kHz can be compared" in card and "recorded at 24 kHz" in card


def test_the_round_trip_through_gradio_client_is_48k(engine48, tmp_path):
    from gradio_client import Client, handle_file

    from tests.ports import reserve_port
    from webui.app import build_app
    from webui.options import UiOptions
    from webui.server import ServerOptions, launch

    ui = UiOptions(temp_root=tmp_path / "server")
    demo = build_app(engine48, ui)
    _app, url = launch(demo, engine48, ui, ServerOptions(port=reserve_port()))
    try:
        client = Client(url, verbose=False)
        clip = clip_44k(tmp_path / "api 44k.wav", 1.0)
        result = client.predict(handle_file(str(clip)), api_name="/roundtrip")
        reconstruction = next(r for r in result if isinstance(r, str) and "reconstruction" in r)
        info = sf.info(reconstruction)
        assert info.samplerate == 48_000 and abs(info.duration - 1.0) < 1e-3
    finally:
        demo.close()


def test_abx_across_rates_plays_a_and_b_at_48k_the_original_with_its_own_band(engine48, tmp_path):
    from core.listening import abx_store
    from webui.tabs.abx import AbxHandlers

    handlers = AbxHandlers(engine48, Workspace(tmp_path / "work"))
    handlers.store = abx_store.AbxStore(tmp_path / "data")
    clip = clip_44k(tmp_path / "abx 44k.wav", 1.5)
    token, *_ = handlers.start(str(clip), 0, 0, 4, "compare", EN)  # B: the 24 kHz base beside the 48 kHz decoder
    a, a_rate = sf.read(handlers._folder(token) / "a.wav", dtype="float32")
    b, b_rate = sf.read(handlers._folder(token) / "b.wav", dtype="float32")
    assert a_rate == b_rate == 48_000 and a.size == b.size == 72_000
    assert band_share(a, 48_000) > 1e-3 and band_share(b, 48_000) < 1e-4  # the base has nothing above 12 kHz


def test_mushra_conditions_across_rates_are_made_and_served_at_48k(engine48, tmp_path):
    from core.audio import rates
    from core.audio.files import audio_from_array, load_audio
    from webui.jobs import shared_test

    clip = clip_44k(tmp_path / "mushra 44k.wav", 1.5)
    samples = load_audio(clip).samples
    audio = audio_from_array(samples, 24_000)
    ids = ["original", "reconstruction", "compare", "lp3.5"]
    made, rate = shared_test.make_conditions(engine48, samples, ids, audio, lambda r: rates.read_at(clip, _limits(), r))
    assert rate == 48_000 and {x.size for x in made.values()} == {72_000}
    assert band_share(made["original"], 48_000) > 1e-3 and band_share(made["compare"], 48_000) < 1e-4
    served = shared_test.listener_wav(shared_test.to_steps(made["reconstruction"]), "0" * 32, rate)
    import io

    assert sf.info(io.BytesIO(served)).samplerate == 48_000


def _limits():
    from core.settings import AudioLimits

    return AudioLimits()


def test_the_decode_tab_says_when_codes_made_beside_48k_are_decoded_at_24k(trip, engine, tmp_path):
    _tabs, _clip, out = trip
    token_file = next(f for f in out.downloads if f.endswith(".npz"))
    tabs24 = Tabs.of(engine, Workspace(tmp_path / "requests"))  # the session's 24 kHz tiny engine
    wav, said, _png, details = tabs24.decode.decode(token_file, EN)
    assert sf.info(wav).samplerate == 24_000 and details["token_file"]["decoder_rate_hz"] == 48_000
    assert "made beside a 48 kHz decoder; this 24 kHz decoder decodes them" in said
    _wav, said_zh, _png, _d = tabs24.decode.decode(token_file, ZH)
    assert "配合 48 kHz 解码器生成" in said_zh
