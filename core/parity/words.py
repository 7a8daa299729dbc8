"""The findings of a parity check as data (a code and its numbers) and their English sentences.

Every finding the checks make is a :class:`Note`; the CLI and the English report say
``ENGLISH[code]`` filled with its fields, the web page the same code from its catalogue
(``webui/locales/<language>/parity.json``, key ``parity.note.<code>``, the same placeholders).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core import notes

ENGLISH = {
    # verdicts
    "identical": "Identical to the reference decode.",
    "rounding": "Rounding only: within {level} LSB (16-bit steps) of the reference decode.",
    "differs": "Differs from t = {time_s:.3f} s (frame {frame}): likely {cause}.",
    "differs_length": "Differs in length: {cause}.",
    # likely causes (the differs verdict names one)
    "cause_seam": "a chunk seam",
    "cause_padding": "padding",
    "cause_precision": "precision",
    "cause_length": "lost or added samples",
    "cause_click": "a click (one sudden jump)",
    "click_first": "The difference starts with a click at {time_s:.3f} s: a jump of {height:.0f} LSB from one sample to the next, far above the difference around it.",
    "cause_silence": "silent output",
    "cause_nonfinite": "a numeric overflow",
    "cause_resampling": "the resampling (their WAV is not at 24 kHz)",
    "ends_early": "The difference starts where their audio ends ({time_s:.3f} s): the rest is missing.",
    "cause_other": "something else (no seam, padding or precision pattern)",
    # the stream check (core.parity.stream_check)
    "stream_ok": (
        "The stream equals the whole decode: {packets} packets of {packet_frames} frames, within {max_lsb:.2f} "
        "16-bit steps everywhere, same length, no gap."
    ),
    "stream_gaps": (
        "{count} gap(s) of inserted silence ({total_ms:.0f} ms in all; the first at {time_s:.2f} s): the player ran "
        "dry (an underrun) while the server was late. Decode ahead of playback and buffer."
    ),
    "stream_windowed": (
        "The stream matches re-decoding each packet with {context} frames of left context ({windowed_snr}), not the "
        "whole decode ({snr}): the decoder's state is not carried from packet to packet. Carry it (an incremental "
        "decoder) or give at least the decoder's 72-frame window of context."
    ),
    "stream_drift": (
        "The stream is {samples} samples ({ms:.1f} ms) {side} than the codes decode to ({expected} samples): "
        "samples are dropped or added at packet edges. Each frame decodes to exactly its samples; keep them all."
    ),
    "stream_longer": "longer",
    "stream_shorter": "shorter",
    "stream_seams": (
        "Clicks at {count} packet seam(s); the worst, {max_lsb:.0f} 16-bit steps, at {time_s:.2f} s (packet "
        "{packet}): packets are joined without the decoder's state."
    ),
    "stream_tail": (
        "The end of the utterance differs ({max_lsb:.0f} 16-bit steps over the last packet) while the rest agrees: "
        "the last packet is decoded or trimmed differently."
    ),
    "stream_other": (
        "The stream differs from the whole decode by up to {max_lsb:.0f} 16-bit steps ({snr}), with no gap, drift "
        "or seam click: another precision or another decoder."
    ),
    # how the inputs were read
    "codes_batch": "The codes came as a batch of one: its only item was used.",
    "codes_transposed": "The codes came as {codebooks} × frames: transposed to frames × {codebooks}.",
    "wav_channels_same": "Their WAV has {channels} identical channels: one was compared.",
    "wav_channels_differ": "Their WAV has {channels} channels that differ: their average was compared (the codec is mono).",
    "wav_resampled": (
        "Their WAV is at {rate} Hz, not {target} Hz: it was resampled before comparing, so the best possible "
        "verdict is rounding (the resampler's), never identical. A decoder output at another rate plays at "
        "the wrong speed wherever it is taken for {target} Hz."
    ),
    # what was found
    "offset": "Their audio is shifted by {samples} samples ({direction}); it was aligned by cross-correlation (peak {peak:.4f}) before comparing.",
    "offset_late": "it starts late",
    "offset_early": "it starts early",
    "polarity": "Their audio is upside down (inverted polarity); it was compared inverted back.",
    "delay_cut": "Their WAV has the reference's length, so their delay of {samples} samples pushes the reference's last {samples} samples past its end: those are not compared.",
    "trimmed": "Their WAV ends at the clip's original length ({samples} samples), as the token file says: not a difference.",
    "length": "Their WAV has {samples} samples {more_or_less} than the {frames} frames decode to ({reference} samples).",
    "more": "more",
    "fewer": "fewer",
    "drift": "The offset changes along the clip: {start} samples at {start_s:.2f} s, {end} samples at {end_s:.2f} s ({change:+d}): samples were lost or added part-way.",
    "seam_onset": "The difference starts at a frame boundary ({into} samples into frame {frame}) where the reference runs on smoothly: a decoder that started a chunk there with less history than a whole decode.",
    "seam_official": "Frame {frame} is a seam of the official chunked_decode (300-frame chunks, 25 frames of left context).",
    "seam_context": "Frame {frame} is the first frame whose history 25 frames of left context cut off: the official chunked_decode with chunks shorter than {frame} frames (1-frame chunks, for example).",
    "seam_window": "Frame {frame} is the first frame whose history a 72-frame left context cuts off.",
    "onsets": "The difference jumps at {count} frame boundaries (frames {listed}).",
    "official_seams_hit": "{hit} of the {count} official seams (every 300 frames) have a jump in the difference.",
    "clicks": "{count} click(s): jumps in the difference of at least 64 LSB, far above the difference around them; {at_seams} at a seam or frame boundary. The largest: a jump of {height:.0f} LSB from one sample to the next at {time_s:.3f} s (a jump can be up to twice the largest difference).",
    "where_official": " (an official 300-frame seam)",
    "where_onset": " (where the difference starts)",
    "where_frame": " (a frame boundary)",
    "where_inside": " (inside a frame: no seam there)",
    "precision_spread": "The difference is spread over the clip from its start: {share:.0%} of frames differ by more than {threshold:g} LSB, SNR {snr:.1f} dB, no jump at a frame boundary: the arithmetic differs (bf16, fp16 or TF32 convolutions; compare with python -m core precision).",
    "padding_zero": "Frame {frame} holds code 0 (codebook {books}): code 0 is a valid code (padding is -1), and a decoder that takes 0 for padding goes wrong there.",
    "padding_tail": "Only the last {frames} frame(s) differ: the end of the codes is padded or cut differently.",
    "silence": "Their audio is silent (RMS {their_db:.0f} dBFS) where the reference is at {reference_db:.0f} dBFS: the bf16 SnakeBeta exp() overflow returns silence.",
    "nonfinite": "Their WAV holds {count} NaN or infinite samples (the first at {time_s:.3f} s), compared as 0: a numeric overflow (bf16 SnakeBeta exp()).",
    "levels": "Compared {seconds:.2f} s: correlation {correlation}, SNR {snr}, largest difference {max_lsb:.2f} LSB.",
    # encode parity
    "encode_identical": "Their codes equal the reference encode: all {frames} frames, all {codebooks} codebooks.",
    "encode_differs": "Their codes differ from frame {frame} (t = {time_s:.2f} s), first in codebook {book}; {agree:.1%} of all codes agree.",
    "encode_frames": "They have {theirs} frames, the reference encode {ours}: {frames_hint}",
    "frames_hint_more": "an extra frame at the end is how padding of the last partial frame differs.",
    "frames_hint_fewer": "a missing last frame is what a port that drops the partial frame makes.",
    "frames_hint_far": "not the same length of audio (another sample rate, or another clip?).",
    "encode_last_only": "Only the last frame differs: the partial last frame is padded differently.",
    "encode_low_books": "Codebook 1 agrees on {first:.1%} of frames but the later codebooks on {later:.1%}: residual quantizers amplify small numeric differences (precision or TF32).",
    "encode_unrelated": "Only {agree:.1%} of codes agree: these look like codes of other audio, another sample rate or another model.",
    "encode_tf32": "The reference encodes in strict fp32 (TF32 off); an encoder with TF32 convolutions on a GPU changes about 1-2% of codes.",
    # the precision sweep's recommendation
    "rec_decode_bf16": "Decode in bf16 here (--decode-dtype bfloat16): {speedup:.1f}× faster than fp32, SNR {snr:.1f} dB against the fp32 decode; {broken} of {chunks} chunk(s) came out broken unguarded (the workbench redoes those in fp32).",
    "rec_decode_fp32": "Decode in fp32 here: bf16 is not enough faster on this machine ({ratio:.2f}× the fp32 time).",
    "rec_decode_fp32_only": "Decode in fp32 here: bf16 did not run on this machine.",
    "rec_encode_fp32": "Encode in fp32: {label} changed {changed:.1%} of the codes.",
    "rec_encode_any": "Every precision measured gave the same codes as fp32 on this clip.",
    "rec_broken": "{label}: {broken} of {chunks} decode chunk(s) came out NaN, infinite, silent or at full scale.",
    "rec_unavailable": "{label} could not run here ({error}).",
    "rec_fp16": "fp16 is measured for ports only: the workbench's settings offer fp32 and bf16.",
    "rec_tf32": "TF32 convolutions (PyTorch's default on a GPU) changed {changed:.1%} of the codes and decode at {snr:.1f} dB SNR against strict fp32: compare two implementations only with the same TF32 flags.",
    "rec_random": "Random weights: these SNRs say nothing about audio quality.",
    "sweep_cut": "The clip was cut to its first {seconds:.0f} s (of {total:.1f} s).",
}


@dataclass(frozen=True)
class Note:
    code: str  # a key of ENGLISH (and parity.note.<code> in the web page's catalogues)
    fields: dict = field(default_factory=dict)  # numbers and strings; a field ending in _code is itself a code

    def english(self) -> str:
        return say(self.code, self.fields)

    def to_dict(self) -> dict:
        return {"code": self.code, "fields": dict(self.fields), "text": self.english()}


def where(seam: str | None, table: dict | None = None) -> str:
    """Where a click sits, as a table cell ("a frame boundary", "inside a frame: no seam there"): the
    ``where_*`` sentence without the brackets it has when it follows a click's line."""
    return say("where_" + (seam or "inside"), {}, table).strip(" ()（）")


def say(code: str, fields: dict, table: dict | None = None) -> str:
    """The sentence for ``code`` in ``table`` (English by default); fields named ``<x>_code`` are codes
    themselves, said in the same table as ``{x}``."""
    return notes.say(code, fields, table or ENGLISH)
