"""What the listener hears is exactly what was measured.

Every source the lab plays (the original as the codec heard it, the reconstruction, the second
checkpoint's, the anchors, the ladder levels, the residuals) is put on the 16-bit PCM grid
(``core.audio.files.on_grid``, written by its one writer ``write_pcm16``) before it is written, so the metrics, the source table and the timeline, which all
read those files, measure 16-bit PCM. The player then gets each source as FLAC, lossless on that
grid: ``listening_copy`` writes one independent FLAC stream per player block (BLOCK_S seconds),
back to back in one file, and returns their byte offsets, so the player still fetches one block
with one HTTP Range request and decodes it with the browser's own FLAC decoder (exact for 16-bit).

Why 16 bits and not 24: FLAC of a float codec output rounded to 24 bits keeps ≈8 bits of noise
below the signal and compresses only 2×; at 16 bits 4× (bench/results/player_bytes.md). Rounding
to 16 bits moved PESQ by ≤ 0.009 and SI-SDR by ≤ 0.08 dB on random checkpoints (bench/results/heard_grid.md); the residual,
original − reconstruction of two 16-bit signals, is on the grid already, clipped at full scale.
"""

from __future__ import annotations

import io
import json
import logging
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import soundfile as sf

from core.audio.files import on_grid
from core.codec import SAMPLE_RATE
from webui.jobs.common import REQUEST_PREFIX

BLOCK_S = 8  # seconds per FLAC stream: webui/static/player_audio.js's CW_BLOCK_S (tests check both)
SUFFIX = ".listen.flac"  # the player's copy beside each WAV
INDEX_SUFFIX = ".listen.json"  # its block offsets, written last: a copy whose index exists is complete
WAIT_S = 10.0  # how long a second job waits for a copy another job is writing

logger = logging.getLogger(__name__)


def listening_copy(wav: Path, samples: np.ndarray, rate_hz: int = SAMPLE_RATE) -> dict | None:
    """The player's FLAC copy of ``wav``, whose samples are ``samples`` at ``rate_hz``: ``{"path", "offsets",
    "frames", "rate"}``, block i being bytes offsets[i] .. offsets[i + 1] - 1 of the file. None when the
    samples are not on the grid (a file given to the lab as it is: the player then reads its WAV, so
    what is heard is still what was measured) or the copy cannot be written there. A copy made
    before (the WAVs are never rewritten) is reused. Only the app's own WAVs get a copy: in a request
    folder, or Gradio's copy of one in its cache (what the lab's inputs are); never beside an example
    clip. Elsewhere the player reads the WAV."""
    x = np.asarray(samples, dtype=np.float32)
    if not _ours(Path(wav)) or not np.array_equal(on_grid(x), x):
        return None
    base = str(wav).removesuffix(".wav")
    path, index = Path(base + SUFFIX), Path(base + INDEX_SUFFIX)
    try:
        return _write_copy(x, path, index, int(rate_hz))
    except FileExistsError:
        return _written(index)
    except OSError as e:
        logger.warning("no FLAC copy of %s (%s): the player reads the WAV", Path(wav).name, e)
        return None


def _ours(wav: Path) -> bool:
    folder = wav.resolve().parent
    if folder.name.startswith(REQUEST_PREFIX):
        return True
    # Gradio's cache, as Gradio finds it (under the app's temp root once webui.serving.storage set it)
    cache = os.environ.get("GRADIO_TEMP_DIR") or str(Path(tempfile.gettempdir()) / "gradio")
    return folder.is_relative_to(Path(cache).resolve())


def _write_copy(x: np.ndarray, path: Path, index: Path, rate_hz: int = SAMPLE_RATE) -> dict:
    block = BLOCK_S * rate_hz
    offsets = [0]
    with open(path, "xb") as f:  # exclusive: a second job waits for this one's index instead
        for start in range(0, max(x.size, 1), block):
            part = x[start : start + block]
            buffer = io.BytesIO()
            sf.write(buffer, part if part.size else np.zeros(1, np.float32), rate_hz, format="FLAC", subtype="PCM_16")
            f.write(buffer.getbuffer())
            offsets.append(offsets[-1] + buffer.getbuffer().nbytes)
    copy = {"path": str(path), "offsets": offsets, "frames": int(x.size), "rate": rate_hz}
    with open(index, "x", encoding="utf-8") as f:
        json.dump(copy, f)
    return copy


def _written(index: Path) -> dict | None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        try:
            return json.loads(index.read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError):
            time.sleep(0.05)
    return None


def read_copy(copy: dict) -> np.ndarray:
    """Every block of a listening copy, decoded and joined (what the player hears; for tests and benches)."""
    data = Path(copy["path"]).read_bytes()
    offsets = copy["offsets"]
    parts = [sf.read(io.BytesIO(data[a:b]), dtype="float32")[0] for a, b in zip(offsets, offsets[1:], strict=False)]
    return np.concatenate(parts) if parts else np.zeros(0, np.float32)
