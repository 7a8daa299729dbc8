"""A shared listening test's audio work, without Gradio: every condition of the region made (the
original, anchors, the codec at a level, the second checkpoint), stored as 16-bit samples with the
test, and served to a listener under names that say nothing.

What a listener's browser learns is a **slot handle** per sound: 32 hex characters of an HMAC of
the test's secret seed, the listener, the screen and the slot (the position in that listener's own
order). The URL is the handle, every sound of a screen has the same byte length (the conditions are
sample-aligned), and each file carries a dither of its own (one least significant bit, TPDF, seeded
by the handle so byte ranges of one file agree), so neither names, URLs, sizes, order nor hashes
tell a condition. Only the server maps a handle back to its condition.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import io
import json
import zipfile
from pathlib import Path

import numpy as np
import soundfile as sf

from core import anchors as core_anchors
from core.audio import rates
from core.codec import NUM_CODEBOOKS, SAMPLE_RATE
from core.errors import CodecError
from core.judging.sources import COMPARE_ID
from core.listening import abx, mushra
from core.model import second
from webui.jobs.abx import BlindInputError, no_second

HANDLE_CHARS = 32
REFERENCE_SLOT = -1  # the open reference's slot on a MUSHRA screen


def make_conditions(
    engine, samples: np.ndarray, source_ids, audio, original_at=None
) -> tuple[dict[str, np.ndarray], int]:
    """Each of ``source_ids`` made from ``samples`` (one region at 24 kHz, float32 mono): original, anchors,
    ``reconstruction``, ``k<n>`` and ``compare``; CodecError naming any that cannot be made. All at one rate,
    returned beside them: the highest a decoder among them writes (48 kHz beside a 48 kHz decoder), the
    original then from ``original_at(rate)`` (the file's own samples: core.audio.rates) when given."""
    made: dict[str, np.ndarray] = {}
    rate_of: dict[str, int] = {}
    anchors = [core_anchors.BY_ID[s] for s in source_ids if s in core_anchors.BY_ID]
    if anchors:
        done = core_anchors.make_anchors(samples, anchors)
        if done.problems:
            raise CodecError(done.problems[0].message)
        made.update({a.anchor.id: a.samples for a in done.made})
    for sid in source_ids:
        if sid in made:
            continue
        if sid == abx.A_ORIGINAL:
            made[sid] = samples
        elif sid in (abx.A_CODEC, COMPARE_ID) or abx.source_kind(sid) == "level":
            decoded = _decoded(engine, sid, audio)
            made[sid], rate_of[sid] = decoded.samples, decoded.sample_rate
        else:
            raise BlindInputError("share.unknown_source", id=sid, max=NUM_CODEBOOKS)
    rate = rates.comparison_rate(rate_of.values())
    n = rates.length_at(samples.size, rate)
    if rate != SAMPLE_RATE and original_at is not None and abx.A_ORIGINAL in made:
        made[abx.A_ORIGINAL], rate_of[abx.A_ORIGINAL] = original_at(rate), rate
    return {sid: _fit(rates.to_rate(x, rate_of.get(sid, SAMPLE_RATE), rate), n) for sid, x in made.items()}, rate


def _decoded(engine, sid: str, audio):
    """The codec's (``reconstruction``, ``k<n>``) or the second checkpoint's (``compare``) decode of ``audio``."""
    if sid == COMPARE_ID:
        other = second.ready_second(engine)
        if other is None:
            raise no_second(engine)
        return other.roundtrip(audio).decoded
    codebooks = NUM_CODEBOOKS if sid == abx.A_CODEC else int(sid[1:])
    return engine.roundtrip(audio, codebooks=codebooks).decoded


def _fit(x: np.ndarray, n: int) -> np.ndarray:
    """Exactly ``n`` samples (decoders may give a few more or fewer): equal lengths, equal file sizes."""
    x = np.asarray(x, dtype=np.float32)[:n]
    return np.pad(x, (0, n - x.size)) if x.size < n else x


def to_steps(samples) -> np.ndarray:
    """Float samples as 16-bit steps, rounded (the dither is added per listener when served)."""
    return np.clip(np.round(np.asarray(samples, dtype=np.float64) * 32767.0), -32768, 32767).astype(np.int16)


def handle(seed: int, listener: str, screen: int, slot: int) -> str:
    """The opaque name of one sound on one listener's screen."""
    message = f"{listener}:{screen}:{slot}".encode()
    return hmac.new(str(seed).encode(), message, hashlib.sha256).hexdigest()[:HANDLE_CHARS]


def mushra_slots(seed: int, listener: str, screen: int, conditions) -> dict[str, str]:
    """handle -> condition id for one listener's screen, in that listener's order (the reference
    under its own handle, slot REFERENCE_SLOT)."""
    ordered = mushra.order(conditions, seed, listener, screen)
    slots = {handle(seed, listener, screen, i): c for i, c in enumerate(ordered)}
    slots[handle(seed, listener, screen, REFERENCE_SLOT)] = "reference"
    return slots


def test_rate(info) -> int:
    """The rate a test's sounds were made at (its plan says; a test made before rates were recorded: 24 kHz)."""
    rate = (info.plan or {}).get("rate_hz")
    return int(rate) if isinstance(rate, int) and not isinstance(rate, bool) and rate > 0 else SAMPLE_RATE


def listener_wav(steps: np.ndarray, handle_text: str, rate_hz: int = SAMPLE_RATE) -> bytes:
    """A 16-bit WAV of ``steps`` (at ``rate_hz``: the test's) with a TPDF dither of one step seeded by the handle."""
    rng = np.random.default_rng(int(handle_text[:16], 16))
    noise = rng.integers(0, 2, steps.size, dtype=np.int32) - rng.integers(0, 2, steps.size, dtype=np.int32)
    out = np.clip(steps.astype(np.int32) + noise, -32768, 32767).astype(np.int16)
    buffer = io.BytesIO()
    sf.write(buffer, out, rate_hz, format="WAV", subtype="PCM_16")
    return buffer.getvalue()


def add_to_report(files: list[Path], section_html: str, pooled: dict, csv_path, title: str, css: str) -> None:
    """Append the shared test's results to a round trip's report: ``listening-test.json`` (pooled,
    by id) and ``listening-test.csv`` (every rating) into the zip, and a section into the page."""
    for path in files:
        if path.suffix == ".zip" and path.is_file():
            with zipfile.ZipFile(path, "a") as z:
                names = set(z.namelist())
                if "listening-test.json" not in names:
                    z.writestr("listening-test.json", json.dumps(pooled, indent=2, default=str))
                    if csv_path:
                        z.write(csv_path, "listening-test.csv")
        elif path.suffix == ".html" and path.is_file():
            page = path.read_text(encoding="utf-8")
            if 'id="listening-test"' not in page:
                section = f'<section id="listening-test"><style>{css}</style><h2>{html.escape(title)}</h2>{section_html}</section>'
                page = page.replace("</body>", section + "</body>") if "</body>" in page else page + section
                path.write_text(page, encoding="utf-8")
