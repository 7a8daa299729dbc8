"""Sentences core/ makes, in the page's language.

core/ writes its sentences in English on purpose: the CLI, the logs and the CSV files show them.
The page shows them in its own language: a sentence core makes with figures is matched here and
said again from the catalogue with the same figures (``PATTERNS``: one table, tested against core's
real sentences); a readiness step is worded from its figures (``Step.data``), a memory estimate from
its fields. A sentence nobody taught this module is shown as core wrote it, never dropped.
"""

from __future__ import annotations

import logging
import re

from core.errors import CodecError
from core.model.readiness import FAIL, PASS, SKIPPED
from webui.i18n import DEFAULT_LANGUAGE, catalogues, filled, text

logger = logging.getLogger(__name__)

_NUMBER = r"-?\d+(?:\.\d+)?"
PATTERNS: tuple[tuple[re.Pattern, str], ...] = tuple(
    (re.compile(pattern), key)
    for pattern, key in (
        # core.audio.blocks: what was done to the input
        # i18n-exempt: core's English, matched (the catalogue says it)
        (r"Resampled from (?P<rate>\d+) Hz to (?P<target>\d+) Hz\.", "words.resampled"),
        # i18n-exempt: core's English, matched (the catalogue says it)
        (r"Stereo downmixed to mono\.", "words.stereo"),
        # i18n-exempt: core's English, matched (the catalogue says it)
        (r"(?P<n>\d+) channels downmixed to mono\.", "words.channels"),
        # i18n-exempt: core's English, matched (the catalogue says it)
        (r"1 sample is clipped\.", "words.clipped_one"),
        # i18n-exempt: core's English, matched (the catalogue says it)
        (r"(?P<n>\d+) samples are clipped\.", "words.clipped"),
        # i18n-exempt: core's English, matched (the catalogue says it)
        (rf"The clip is nearly silent \((?P<db>{_NUMBER}) dBFS\)\.", "words.near_silent"),
        (
            # i18n-exempt: core's English, matched (the catalogue says it)
            r"The peak is (?P<db>[+-]\d+) dBFS, over full scale \(float samples above 1\.0\): it clips when played "
            r"and its levels are not comparable; normalize it\.",
            "trust.over_full_scale",
        ),
        (
            # i18n-exempt: core's English, matched (the catalogue says it)
            r"'(?P<name>.+)' is far over full scale: a sample of (?P<value>\S+) at (?P<at>[\d.]+) s is "
            r"(?P<db>[+-]\d+) dBFS, over the (?P<limit>[+-]\d+) dBFS limit \(1\.0 is full scale\)\. The file was "
            r"written with the wrong scale or by a broken program; normalize or re-export it\.",
            "trust.too_loud",
        ),
        # core.analysis.metrics: why a metric has no value, or what it covers
        # i18n-exempt: core's English, matched (the catalogue says it)
        (rf"PESQ needs at least (?P<s>{_NUMBER}) s of audio", "words.pesq_short"),
        # i18n-exempt: core's English, matched (the catalogue says it)
        (rf"STOI needs at least (?P<s>{_NUMBER}) s of speech", "words.stoi_short"),
        (  # i18n-exempt: core.analysis.speaker's English sentence, matched to be said again
            rf"speaker similarity needs at least (?P<need>{_NUMBER}) s of speech; the original has (?P<s>{_NUMBER}) s",
            "words.speaker_short",
        ),
        # i18n-exempt: core's English, matched (the catalogue says it)
        (r"the original is silent; (?P<metric>PESQ|STOI) needs speech", "words.silent_speech"),
        # i18n-exempt: core's English, matched (the catalogue says it)
        (r"the original is silent; SI-SDR needs a signal", "words.silent_signal"),
        # i18n-exempt: core's English, matched (the catalogue says it)
        (rf"on the first (?P<window>{_NUMBER}) s of (?P<total>{_NUMBER}) s, for speed", "words.first_part"),
        # i18n-exempt: core's English, matched (the catalogue says it)
        (rf"over (?P<db>{_NUMBER}) dB below the loudest part of the original", "words.mel_floor"),
        # i18n-exempt: core's English, matched (the catalogue says it)
        (r"could not be computed: (?P<detail>.+)", "words.not_computed"),
        # core.audio: why a clip cannot be used (the errors people meet most)
        # i18n-exempt: core's English, matched (the catalogue says it)
        (r"'(?P<name>.+)' is empty \(0 bytes\): there is no audio in it\.", "words.empty_file"),
        (
            # i18n-exempt: core's English, matched (the catalogue says it)
            r"'(?P<name>.+)' is empty \(0 bytes\)\. It was probably not saved or uploaded completely; try again "
            r"with the complete file\.",
            "words.empty_upload",
        ),
        # i18n-exempt: core's English, matched (the catalogue says it)
        (r"'(?P<name>.+)' is (?P<size>\d+) MiB, over the (?P<limit>\d+) MiB limit\.", "words.too_big"),
        (
            # i18n-exempt: core's English, matched (the catalogue says it)
            r"'(?P<name>.+)' is (?P<length>[\d.]+ (?:s|min)) long, over the (?P<limit>[\d.]+ (?:s|min)) limit\. "
            r"Cut it into shorter pieces and try again\.",
            "words.too_long",
        ),
        (
            # i18n-exempt: core's English, matched (the catalogue says it)
            r"'(?P<name>.+)' is not an audio file this program can read, or it is damaged \((?P<detail>.*)\)\. "
            r"Give a file in one of these formats: (?P<formats>.+)\.",
            "words.unreadable",
        ),
        # i18n-exempt: core's English, matched (the catalogue says it)
        (r"'(?P<name>.+)' has no audio track\. Accepted formats: (?P<formats>.+)\.", "words.no_track"),
        (
            # i18n-exempt: core's English, matched (the catalogue says it)
            r"'(?P<name>.+)' is (?P<ms>\d+) ms long; the codec needs at least (?P<need>\d+) ms \(one frame\)\. "
            r"Give a longer clip\.",
            "running.too_short_clip",
        ),
        (
            # i18n-exempt: core's English, matched (the catalogue says it)
            rf"'(?P<name>.+)' is cut off: its header promises (?P<promised>{_NUMBER}) s of audio but the file holds "
            rf"only (?P<held>{_NUMBER}) s\. It was probably not copied or uploaded completely; get the complete "
            r"file or re-export it\.",
            "words.cut_off",
        ),
        # i18n-exempt: core's English, matched (the catalogue says it)
        (r"No audio file was given\. Choose a file or record a clip\.", "words.no_file"),
        # i18n-exempt: core's English, matched (the catalogue says it)
        (r"'(?P<name>.+)' contains no audio samples\. Record or choose a longer clip\.", "words.no_samples"),
        (
            # i18n-exempt: core's English, matched (the catalogue says it)
            rf"Decoding '(?P<name>.+)' took longer than (?P<seconds>{_NUMBER}) s\. Convert it to WAV or FLAC "
            r"and try again\.",
            "words.decode_slow",
        ),
        # core.model.second: why no second checkpoint is ready (loading, failed, none)
        # i18n-exempt: core's English, matched (the catalogue says it)
        (r"The second checkpoint is still loading: try again in a moment\.", "second.loading"),
        (
            # i18n-exempt: core's English, matched (the catalogue says it)
            r"(?s)The second checkpoint failed to load: (?P<error>.+)\. Load it again \(or another one\) on the "
            # i18n-exempt: core's English, matched (the catalogue says it)
            r"System tab, or start with --compare-model DIR\.",
            "second.failed",
        ),
        (
            # i18n-exempt: core's English, matched (the catalogue says it)
            r"No second checkpoint is loaded: start with --compare-model DIR \(or pick one on the System tab\)\.",
            "second.none",
        ),
        # core.nn.fast_decode: chunks redone in float32
        (
            # i18n-exempt: core's English, matched (the catalogue says it)
            r"(?P<redone>\d+) of (?P<chunks>\d+) decode chunk\(s\) came out broken in (?P<dtype>\w+) \(non-finite or "
            # i18n-exempt: core's English, matched (the catalogue says it)
            r"full-scale samples\) and were decoded again in float32\. If this repeats, run with "
            # i18n-exempt: core's English, matched (the catalogue says it)
            r"--decode-dtype float32\.",
            "words.redone_chunks",
        ),
    )
)


ERRNO = re.compile(r"\[Errno -?\d+\]\s*")  # a library's error number: nothing a reader can use


def sentence(english: str, lang: str) -> str:
    """One of core's sentences in ``lang`` (as it is where no pattern knows it); never an errno."""
    english = ERRNO.sub("", english)
    if lang == DEFAULT_LANGUAGE:
        return english
    for pattern, key in PATTERNS:
        found = pattern.fullmatch(english.strip())
        if found:
            brief = key + "_brief"  # without a library's own English words, where a sentence quotes them
            return text(brief if brief in catalogues()[DEFAULT_LANGUAGE] else key, lang, **found.groupdict())
    logger.debug("no translation for core's sentence %r", english)
    return english


CAPTURED = {
    "words.resampled": "capture.resampled",
    "words.stereo": "capture.stereo",
    "words.channels": "capture.channels",
}


def captured(english: str, lang: str) -> str:
    """One of core's sentences about a Live recording: what was done to the browser's capture format is
    said as what the browser chose (its rate, its channels), not as something the user gave wrongly."""
    for pattern, key in PATTERNS:
        found = pattern.fullmatch(english.strip())
        if found and key in CAPTURED:
            return text(CAPTURED[key], lang, **found.groupdict())
    return sentence(english, lang)


def step_detail(step: dict, lang: str) -> str:
    """A readiness step's detail, worded from its figures where the step passed or was skipped by
    design; a failure's detail is core's evidence (it names what failed), after a sentence in ``lang``."""
    data, name, status = step.get("data") or {}, step.get("name"), step.get("status")
    if status == FAIL:
        return text("words.step_failed", lang, detail=step.get("detail", ""))
    if name == "cuda" and status == SKIPPED:
        return text("words.cuda_on_cpu" if not data.get("cuda") else "words.cuda_unused", lang)
    if name == "cuda" and status == PASS and "name" in data:
        bf16 = text("words.yes" if data.get("bf16") else "words.no", lang)
        return text(
            "words.cuda_pass", lang, name=data["name"], free=data["free_mib"], total=data["total_mib"], bf16=bf16
        )
    if name == "weights" and status == PASS and "mib" in data:
        return text("words.weights_pass", lang, mib=f"{data['mib']:.0f}", dtype=data.get("dtype", ""))
    if name == "roundtrip" and status == PASS and "seconds" in data:
        return text("words.roundtrip_pass", lang, ms=f"{data['seconds'] * 1000:.0f}")
    return sentence(step.get("detail", ""), lang)


def estimate(value, lang: str) -> str:
    """The engine's memory estimate before a job (webui.jobs.codec's figures) in ``lang``; an
    older caller's English message as it is."""
    if not isinstance(value, dict) or "operation" not in value:
        return str(value or "")
    fields = {k: v for k, v in value.items() if k != "operation"}
    return text(f"job.estimate.{value['operation']}", lang, **filled(fields, lang))


def codec_error_text(error: CodecError, lang: str) -> str:
    """A core error for the page: the lead sentence of its class (or the nearest base class that
    has one) in ``lang``, then core's English detail."""
    detail = sentence(str(error), lang)  # in ``lang`` where the sentence is known; no errno
    for cls in type(error).__mro__:
        key = f"error.lead.{cls.__name__}"
        if key in catalogues()[DEFAULT_LANGUAGE]:
            return text(key, lang, detail=detail)
    return detail  # not reached: error.lead.CodecError exists
