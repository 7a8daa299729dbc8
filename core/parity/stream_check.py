"""Check someone else's streamed decode: their audio of codes decoded a packet at a time against the
whole decode of the same codes (``python -m core stream-parity``, docs/stream-decode.md).

What serving projects get wrong, each measured:

- **Gaps** (underruns): runs of inserted silence (at least ``GAP_MIN_MS`` of samples within
  ``SILENT_LSB`` of zero where the reference is not silent). Each is reported with its time and length,
  then cut out, so what follows is compared where it belongs.
- **Length drift**: their length (gaps removed) against frames × samples a frame.
- **Seams**: at every packet boundary the largest difference within ``SEAM_MS`` either side, and the
  clicks there (``core.parity.seams.clicks``: a jump in the difference far above its level around it).
- **The tail**: the difference over the last packet (the end of the utterance), and samples missing
  or extra at the end.
- **Windowed re-decoding**: the first ``WINDOWED_MAX_FRAMES`` frames are also decoded the way servers
  built on the official ``chunked_decode`` do (each packet re-decoded by the official decoder with 25 or
  72 frames of left context, keeping the packet's samples); when their audio is far closer to one of
  those than to the whole decode, the verdict names it as the likely cause.

Verdict: ``ok`` when the whole stream is within ``OK_MAX_LSB`` 16-bit steps of the whole decode, with
no gap and no drift (the workbench's own stream, float32 or 16-bit, is); otherwise ``failed``, with
the sentence naming the first cause found.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from core.model.family import output_rate_of
from core.nn.decoding import samples_per_frame
from core.parity import seams
from core.parity.words import Note

logger = logging.getLogger(__name__)

LSB = 1.0 / 32768  # one 16-bit step
OK_MAX_LSB = 2.0  # a stream within this many 16-bit steps of the whole decode everywhere is the same audio
SILENT_LSB = 1.0  # a sample this close to zero counts as silence
GAP_MIN_MS = 10.0  # inserted silence this long or longer is a gap
REFERENCE_SILENT_DB = -60.0  # the reference is silent where its RMS over the gap is below this (dBFS)
SEAM_MS = 5.0  # a seam's error: the largest difference within this of the boundary
SEAMS_LISTED = 10  # the worst seams listed
WINDOWED_MAX_FRAMES = 150  # frames decoded the windowed way for the likely-cause check (12 s)
WINDOW_CONTEXTS = (25, 72)  # left context of the windowed re-decodes compared
MATCH_SNR_DB = 60.0  # their audio "is" a windowed re-decode when this close to it


@dataclass(frozen=True)
class Gap:
    time_s: float  # where the inserted silence starts, in their audio
    ms: float


@dataclass(frozen=True)
class Seam:
    packet: int  # the packet that starts here (1 = the second packet)
    time_s: float
    max_lsb: float  # largest difference within SEAM_MS of the boundary, in 16-bit steps
    clicks: int  # clicks within SEAM_MS of it


@dataclass
class StreamCheck:
    verdict: str  # "ok" or "failed"
    sentence: str  # what was found and the likely cause
    packet_frames: int
    packets: int
    sample_rate: int
    their_samples: int
    our_samples: int
    drift_samples: int  # theirs (gaps removed) - ours
    max_lsb: float  # largest difference over the common length (gaps removed), 16-bit steps
    snr_db: float | None  # over the common length; None when identical
    tail_max_lsb: float  # over the last packet
    gaps: list[Gap] = field(default_factory=list)
    worst_seams: list[Seam] = field(default_factory=list)
    seams_with_clicks: int = 0
    clicks_off_seams: int = 0
    windowed_snr_db: dict[str, float | None] = field(default_factory=dict)  # context -> SNR of theirs against it
    likely_cause: str | None = None  # "gaps", "drift", "windowed-25", "windowed-72", "seams", "tail", "other"
    finding: Note | None = None  # the verdict's sentence as a code and its numbers (``core.parity.words``)

    def to_dict(self) -> dict:
        out = asdict(self)
        out["finding"] = self.finding.to_dict() if self.finding else None
        return out


def _snr(x: np.ndarray, ref: np.ndarray) -> float | None:
    err = float(np.sum((x.astype(np.float64) - ref) ** 2))
    if err == 0:
        return None
    return float(10 * np.log10(max(float(np.sum(ref.astype(np.float64) ** 2)), 1e-30) / err))


def find_gaps(theirs: np.ndarray, ours: np.ndarray, rate: int) -> tuple[list[Gap], np.ndarray]:
    """Inserted silences in ``theirs`` (see the module docstring) and ``theirs`` without them."""
    minimum = int(GAP_MIN_MS * rate / 1000)
    silent = np.abs(theirs) <= SILENT_LSB * LSB
    edges = np.diff(np.concatenate([[0], silent.astype(np.int8), [0]]))
    starts, stops = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    gaps: list[Gap] = []
    keep: list[np.ndarray] = []
    removed = cursor = 0
    for start, stop in zip(starts.tolist(), stops.tolist(), strict=True):
        length = stop - start
        at = start - removed  # where this run sits in the reference
        if length < minimum or at >= ours.size:  # short, or past the reference's end (that is drift)
            continue
        ref = ours[at : at + length].astype(np.float64)
        if 20 * np.log10(max(float(np.sqrt(np.mean(np.square(ref)))), 1e-12)) < REFERENCE_SILENT_DB:
            continue  # the reference is silent there too
        gaps.append(Gap(round(start / rate, 4), round(1000 * length / rate, 1)))
        keep.append(theirs[cursor:start])
        cursor = stop
        removed += length
    keep.append(theirs[cursor:])
    return gaps, np.concatenate(keep) if keep else theirs


def windowed_decode(model, codes: np.ndarray, packet: int, context: int) -> np.ndarray:
    """Each packet re-decoded by the official decoder with ``context`` frames before it (its samples kept)."""
    decoder = model.decoder
    per_frame = samples_per_frame(decoder)
    device = next(decoder.parameters()).device
    parts = []
    with torch.inference_mode():
        for low in range(0, codes.shape[0], packet):
            high = min(low + packet, codes.shape[0])
            window = torch.from_numpy(np.ascontiguousarray(codes[max(0, low - context) : high].T[None])).to(device)
            parts.append(decoder(window).reshape(-1)[-(high - low) * per_frame :].float().cpu().numpy())
    return np.concatenate(parts) if parts else np.zeros(0, np.float32)


def compare(
    theirs: np.ndarray, ours: np.ndarray, packet_frames: int, samples_per_frame: int, rate: int, windowed=None
) -> StreamCheck:
    """Their streamed audio against ``ours`` (the whole decode); ``windowed``: {context: that windowed
    re-decode of the first frames} for the likely-cause check."""
    if packet_frames < 1:
        raise ValueError("packet_frames must be at least 1")
    theirs = np.asarray(theirs, dtype=np.float32)
    ours = np.asarray(ours, dtype=np.float32)
    frames = ours.size // samples_per_frame
    packet_samples = packet_frames * samples_per_frame
    gaps, clean = find_gaps(theirs, ours, rate)
    n = min(clean.size, ours.size)
    diff = clean[:n].astype(np.float64) - ours[:n]
    max_lsb = float(np.max(np.abs(diff)) / LSB) if n else 0.0
    boundaries = list(range(packet_frames, frames, packet_frames))
    found = seams.clicks(diff, LSB, [], []) if n else []
    near = int(SEAM_MS * rate / 1000)
    rows = []
    for k, frame in enumerate(boundaries, start=1):
        at = frame * samples_per_frame
        if at >= n:
            break
        around = diff[max(0, at - near) : at + near]
        here = sum(1 for c in found if abs(c.sample - at) <= near)
        rows.append(Seam(k, round(at / rate, 4), round(float(np.max(np.abs(around)) / LSB), 2), here))
    on_seams = sum(r.clicks for r in rows)
    last = max(0, (frames - 1) // packet_frames * packet_samples)
    tail = diff[last:n]
    tail_lsb = float(np.max(np.abs(tail)) / LSB) if tail.size else 0.0
    drift = int(clean.size - ours.size)
    windowed_snr: dict[str, float | None] = {}
    for context, audio in (windowed or {}).items():
        m = min(audio.size, clean.size)
        windowed_snr[str(context)] = _snr(clean[:m], audio[:m]) if m else None
    result = StreamCheck(
        verdict="ok",
        sentence="",
        packet_frames=packet_frames,
        packets=-(-frames // packet_frames),
        sample_rate=rate,
        their_samples=int(theirs.size),
        our_samples=int(ours.size),
        drift_samples=drift,
        max_lsb=round(max_lsb, 2),
        snr_db=_snr(clean[:n], ours[:n]),
        tail_max_lsb=round(tail_lsb, 2),
        gaps=gaps,
        worst_seams=sorted(rows, key=lambda r: -r.max_lsb)[:SEAMS_LISTED],
        seams_with_clicks=sum(1 for r in rows if r.clicks),
        clicks_off_seams=len(found) - on_seams,
        windowed_snr_db=windowed_snr,
    )
    _judge(result, ours.size)
    return result


def _judge(r: StreamCheck, our_samples: int) -> None:
    """The verdict, the likely cause and its finding (``core.parity.words``: ``stream_*``)."""
    rate = r.sample_rate
    if not r.gaps and r.drift_samples == 0 and r.max_lsb <= OK_MAX_LSB:
        r.verdict, r.likely_cause = "ok", None
        fields: dict = {"packets": r.packets, "packet_frames": r.packet_frames, "max_lsb": r.max_lsb}
        return _say(r, "stream_ok", fields)
    r.verdict = "failed"
    matches = {c: s for c, s in r.windowed_snr_db.items() if s is None or s >= MATCH_SNR_DB}
    if r.gaps:
        r.likely_cause = "gaps"
        fields = {"count": len(r.gaps), "total_ms": sum(g.ms for g in r.gaps), "time_s": r.gaps[0].time_s}
        return _say(r, "stream_gaps", fields)
    if matches and r.snr_db is not None and r.snr_db < MATCH_SNR_DB:
        context = min(matches, key=int)
        r.likely_cause = f"windowed-{context}"
        fields = {"context": int(context), "windowed_snr": _db(r.windowed_snr_db[context]), "snr": _db(r.snr_db)}
        return _say(r, "stream_windowed", fields)
    if r.drift_samples:
        r.likely_cause = "drift"
        fields = {
            "samples": abs(r.drift_samples),
            "ms": 1000 * abs(r.drift_samples) / rate,
            "side_code": "stream_longer" if r.drift_samples > 0 else "stream_shorter",
            "expected": our_samples,
        }
        return _say(r, "stream_drift", fields)
    if r.seams_with_clicks:
        worst = r.worst_seams[0]
        r.likely_cause = "seams"
        fields = {
            "count": r.seams_with_clicks,
            "max_lsb": worst.max_lsb,
            "time_s": worst.time_s,
            "packet": worst.packet + 1,
        }
        return _say(r, "stream_seams", fields)
    if r.tail_max_lsb > OK_MAX_LSB and r.tail_max_lsb >= r.max_lsb:
        r.likely_cause = "tail"
        return _say(r, "stream_tail", {"max_lsb": r.tail_max_lsb})
    r.likely_cause = "other"
    return _say(r, "stream_other", {"max_lsb": r.max_lsb, "snr": _db(r.snr_db)})


def _say(r: StreamCheck, code: str, fields: dict) -> None:
    r.finding = Note(code, fields)
    r.sentence = r.finding.english()


def _db(value: float | None) -> str:
    return "∞ dB" if value is None else f"{value:.1f} dB"


def check_stream(engine, codes: np.ndarray, theirs: np.ndarray, packet_frames: int) -> StreamCheck:
    """Decode ``codes`` whole with the engine (strict fp32 on a GPU) and the first frames windowed, and
    compare ``theirs`` (float32 at the decoder's rate) against them."""
    from core.parity.precision import tf32

    with tf32(False):
        ours = np.asarray(engine.decode(codes).samples, dtype=np.float32)
        first = codes[: min(codes.shape[0], WINDOWED_MAX_FRAMES)]
        with engine.model_work("decode") as (model, _runner):
            windowed = {c: windowed_decode(model, first, packet_frames, c) for c in WINDOW_CONTEXTS}
    rate = output_rate_of(engine.model)
    result = compare(theirs, ours, packet_frames, rate.samples_per_frame, rate.rate_hz, windowed)
    logger.info("stream parity: %s", result.sentence)
    return result
