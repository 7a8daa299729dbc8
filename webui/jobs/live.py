"""The Live tab's work without Gradio: a stopped live session becomes a round-trip result.

``save_result`` writes what ``webui.jobs.codec.roundtrip`` writes (the 24 kHz mono original, the
reconstruction, the token file, the spectrogram comparison) into the session's request folder, from
the session itself: the recording as the codec heard it and the audio streamed back while it ran
(whose codes equal the offline encode of the recording: tests/core/nn/test_streaming.py). The facts,
token summary and timing go into ``live.json`` beside them, so ``load_result`` can show the result
later from the folder alone (the WebSocket ends before the page asks for it).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from core import tokens
from core.analysis import metrics as analysis
from core.audio.files import write_wav
from core.model.live import LiveResult
from webui.jobs.codec import RoundTripOutput

RESULT_FILE = "live.json"  # facts, token summary and timing of a stopped session, in its folder
STEM = "live"  # name stem of a session's files
RESULT_ID = re.compile(r"^req-live-[A-Za-z0-9_]{1,64}$")  # what a result id (its folder's name) may look like


def save_result(engine, result: LiveResult, folder: Path, latency: dict | None = None) -> RoundTripOutput:
    """Write a stopped session's files as a round trip does; return them as a RoundTripOutput."""
    start = time.perf_counter()
    recording = result.recording
    token_file = tokens.make_token_file(result.codes, recording.samples.size, engine.info()["model"])
    original = write_wav(folder / f"{STEM}_24k_mono.wav", recording.samples)
    reconstruction = write_wav(folder / f"{STEM}_reconstruction.wav", result.reconstruction)
    token_path = tokens.save_tokens(token_file, folder / f"{STEM}_tokens.npz")
    figure = analysis.spectrogram_figure(recording.samples, result.reconstruction)
    png = analysis.figure_to_png(figure, folder / f"{STEM}_spectrogram.png")
    model_s = result.stats["compute_ms_median"] * result.stats["frames"] / 1000
    timing = {
        "encode_s": 0.0,
        "decode_s": 0.0,
        "model_s": model_s,
        "total_s": result.stats["seconds"],
        "ui_s": time.perf_counter() - start,
        "peak_gpu_mib": None,
        "warnings": [],
        "live": {**result.stats, **(latency or {})},
    }
    out = RoundTripOutput(
        original,
        reconstruction,
        token_path,
        png,
        recording.facts.to_dict(),
        token_file.summary(recording.facts.pcm_bps),
        timing,
    )
    record = {"facts": out.facts, "summary": out.summary, "timing": out.timing}
    with open(folder / RESULT_FILE, "x", encoding="utf-8") as f:
        json.dump(record, f)
    return out


def load_result(root: Path, result_id: str) -> RoundTripOutput | None:
    """The result a session left in ``root`` under ``result_id`` (its folder's name), or None when
    the id is malformed or the folder is gone (expired)."""
    if not RESULT_ID.match(result_id or ""):
        return None
    folder = Path(root) / result_id
    record_path = folder / RESULT_FILE
    if not record_path.is_file():
        return None
    record = json.loads(record_path.read_text(encoding="utf-8"))
    return RoundTripOutput(
        folder / f"{STEM}_24k_mono.wav",
        folder / f"{STEM}_reconstruction.wav",
        folder / f"{STEM}_tokens.npz",
        folder / f"{STEM}_spectrogram.png",
        record["facts"],
        record["summary"],
        record["timing"],
    )
