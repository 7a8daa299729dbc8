"""Real encoders through PyAV: a clip into an FFmpeg encoder and back out of its decoder.

The encoded packets go into an in-memory file of the codec's usual container (Ogg for Opus, MP3,
AMR), and the file is read back through FFmpeg's demuxer and decoder: that is where Opus's
pre-skip and LAME's encoder delay are removed, as in any player. The bitrate is the sum of the
packets' bytes over the clip's duration (the codec's own bytes, not the container's pages).

The clip goes in as blocks of ``BLOCK_S`` seconds, so nothing but the output grows with its length.
"""

from __future__ import annotations

import functools
import io
import logging
import typing
from dataclasses import dataclass

import numpy as np
import soxr

from core.anchors.catalog import Anchor
from core.codec import SAMPLE_RATE

logger = logging.getLogger(__name__)

BLOCK_S = 10.0  # seconds of audio handed to PyAV at a time
RESAMPLE_QUALITY = "HQ"  # soxr's quality for the narrowband round trip


class EncoderMissing(Exception):
    """This PyAV build has none of the anchor's encoders (the message says which and what to do)."""


@dataclass(frozen=True)
class Encoded:
    samples: np.ndarray  # float32 mono at SAMPLE_RATE, aligned with the input, same length
    payload_bytes: int  # the codec's packets, summed


@functools.cache
def encoder_name(anchor: Anchor) -> str:
    """The first of the anchor's FFmpeg encoders this PyAV build carries, or EncoderMissing."""
    import av

    for name in anchor.encoders:
        try:
            av.codec.Codec(name, "w")
        except Exception:  # noqa: BLE001 - PyAV raises different errors for unknown codecs across versions
            continue
        return name
    raise EncoderMissing(
        f"{anchor.label} needs FFmpeg's {' or '.join(anchor.encoders)} encoder, which this PyAV build "
        f"(av {av.__version__}) does not carry; it was left out and the other sources were made. "
        f"Install a PyAV wheel built with it, or leave {anchor.id} out of --anchors / CODEC_ANCHORS."
    )


def through_codec(samples: np.ndarray, anchor: Anchor) -> Encoded:
    """``samples`` (float32 mono at SAMPLE_RATE) encoded and decoded by ``anchor``'s codec, back at
    SAMPLE_RATE, time-aligned with the input and trimmed or padded to its length."""
    x = np.asarray(samples, dtype=np.float32).reshape(-1)
    at_rate = x if anchor.rate == SAMPLE_RATE else soxr.resample(x, SAMPLE_RATE, anchor.rate, RESAMPLE_QUALITY)
    data, payload = _encode(at_rate, anchor)
    decoded, rate = _decode(data)
    if anchor.delay_samples and rate == anchor.rate:
        decoded = decoded[anchor.delay_samples :]
    if rate != SAMPLE_RATE:
        decoded = soxr.resample(decoded, rate, SAMPLE_RATE, RESAMPLE_QUALITY)
    out = np.zeros(x.size, dtype=np.float32)
    n = min(x.size, decoded.size)
    out[:n] = decoded[:n]
    return Encoded(out, payload)


def _encode(x: np.ndarray, anchor: Anchor) -> tuple[bytes, int]:
    import av

    buffer = io.BytesIO()
    payload = 0
    with av.open(buffer, "w", format=anchor.container) as out:
        stream = typing.cast("av.audio.stream.AudioStream", out.add_stream(encoder_name(anchor), rate=anchor.rate))
        stream.layout = "mono"
        stream.bit_rate = int(anchor.nominal_bps or 0)
        context = stream.codec_context
        context.options = dict(anchor.options)
        context.open()  # now its sample format and frame size are known
        fifo = av.AudioResampler(
            format=typing.cast("av.AudioFormat", context.format).name,
            layout="mono",
            rate=anchor.rate,
            frame_size=context.frame_size or None,
        )
        block = max(1, int(BLOCK_S * anchor.rate))
        for start in [*range(0, x.size, block), None]:  # None: flush what the resampler holds
            frame = None
            if start is not None:
                frame = av.AudioFrame.from_ndarray(
                    np.ascontiguousarray(x[start : start + block])[None], format="flt", layout="mono"
                )
                frame.sample_rate = anchor.rate
            for resampled in fifo.resample(frame):
                resampled.pts = None  # the encoder counts samples itself
                for packet in stream.encode(resampled):
                    payload += packet.size
                    out.mux(packet)
        for packet in stream.encode(None):
            payload += packet.size
            out.mux(packet)
    return buffer.getvalue(), payload


def _decode(data: bytes) -> tuple[np.ndarray, int]:
    import av

    parts: list[np.ndarray] = []
    with av.open(io.BytesIO(data), "r") as container:
        stream = container.streams.audio[0]
        rate = stream.codec_context.sample_rate
        to_float = av.AudioResampler(format="flt", layout="mono", rate=rate)
        for frame in container.decode(stream):
            parts.extend(f.to_ndarray().reshape(-1) for f in to_float.resample(frame))
        parts.extend(f.to_ndarray().reshape(-1) for f in to_float.resample(None))
    return (np.concatenate(parts) if parts else np.zeros(0, np.float32)).astype(np.float32, copy=False), rate
