"""The blind test's server side: can a listener tell the original from the codec's output?

A is the original (or the codec's full-rate output), B the reconstruction, X one of them at random
(core.judging.abx plans it and keeps the answers, with what A and B are, in SQLite). B is the full
rate (16 codebooks) or a ladder level: the decode of the clip's codes with their first k codebooks
(core.nn.ladder), to find the lowest bitrate a listener cannot tell apart; or a reference codec made
from the same region (core.anchors), or the second checkpoint's reconstruction (core.model.second). The page (``webui.tabs.abx_page``) plays A, B and X in one transport without
waveforms, and X is written anew for every trial under a name only the session's token gives, so
neither the picture nor the file name gives the answer away. Nothing is shown about the answers
until the last one is in: before it, no output carries the score, only how many are left.

Issue 19: A and B are 16-bit WAVs with their own dither, and X is written for each trial from A's
or B's samples with a fresh dither (one least significant bit, -96 dBFS: inaudible), so X's bytes
(and hash) never equal A's or B's; a script can still tell them apart by decoding and comparing
samples, a listener cannot. A repeated or stale answer writes nothing. The SQLite store is never
touched on the model's queue (``AbxStore.start`` writes nothing).

The session token lives only in the page (a hidden textbox) and in the API caller's hands; the
server keeps its hash. The trial number travels with each answer, so a double key press cannot
answer the next trial unheard.
"""

from __future__ import annotations

import hashlib
import html
import json
import logging
import math
import secrets
from dataclasses import dataclass, field
from pathlib import Path

import gradio as gr
import numpy as np
import soundfile as sf

from core import anchors as anchor_lib
from core.audio.files import audio_from_array, load_audio
from core.codec import NUM_CODEBOOKS, SAMPLE_RATE, bitrate_bps
from core.errors import CodecError
from core.judging import abx, abx_store
from core.judging.sources import CODEC_BPS, COMPARE_ID, short_label
from core.model import second
from webui import i18n
from webui.common import TabHandlers, need_file, user_errors
from webui.serving.workspace import PREFIX
from webui.views import compare_view

logger = logging.getLogger(__name__)

MIN_REGION_S = 1.0  # s; shorter regions are too short to judge
_MEANINGS = {"can": "abx.meaning_can", "probably": "abx.meaning_probably", "cannot": "abx.meaning_cannot"}
TRANSPORT_WORDS = ("play", "pause", "loop", "zoom_in", "zoom_out", "zoom_all", "sources", "alt_track", "alt_loop")


def _source(path: Path | None, source_id: str, key: str, caption: str) -> str:
    """One source of the blind test's transport (webui/static/abx_player.js reads these): no
    player, no waveform of its own (X's picture would give the answer away)."""
    if path is None:
        return ""
    return (
        f'<div class="cw-abx-source" data-cw-source="{source_id}" data-key="{key}" '
        f'data-label="{html.escape(caption)}" data-path="{html.escape(str(path))}">'
        f"<kbd>{key}</kbd> {html.escape(caption)}</div>"
    )


def _transport_words(lang: str) -> str:
    """The transport's words in the page's language, for the player to read."""
    words = {key: i18n.text(f"lab.player.{key}", lang) for key in TRANSPORT_WORDS}
    return f'<div hidden data-cw-words="{html.escape(json.dumps(words))}" data-cw-rate="{SAMPLE_RATE}"></div>'


@dataclass
class AbxHandlers(TabHandlers):
    """The tab's handlers: the engine for the round trip, request folders, the answer store."""

    store: abx_store.AbxStore = field(init=False)

    def __post_init__(self):
        settings = self.engine.settings
        self.store = abx_store.AbxStore(settings.data_dir, session_ttl_s=settings.abx_session_ttl_s)

    def _folder(self, token: str) -> Path:
        """The session's media folder, found from the token alone (no path ever comes from the client)."""
        return self.workspace.root / f"{PREFIX}abx-{hashlib.sha256(token.encode()).hexdigest()[:32]}"

    def _x(self, token: str, trial: abx_store.Trial) -> Path:
        """X of this trial: A's or B's 16-bit samples with a dither of their own, under a name only the
        token gives (written once: a repeated call finds it)."""
        folder = self._folder(token)
        target = folder / f"x-{hashlib.sha256(f'{token}:{trial.index}'.encode()).hexdigest()[:24]}.wav"
        if target.is_file():
            return target
        source = folder / ("a.wav" if trial.x_is == "A" else "b.wav")
        if not source.is_file():
            raise i18n.TranslatedError("abx.audio_gone")
        for old in folder.glob("x-*.wav"):
            old.unlink(missing_ok=True)
        samples, _rate = sf.read(source, dtype="int16")
        _write_pcm16(target, samples.astype(np.int32) + _tpdf_lsb(samples.size))
        return target

    def _trial_outputs(self, token: str, trial: abx_store.Trial, lang: str):
        x = self._x(token, trial)
        prompt = i18n.text("abx.prompt", lang, n=trial.index + 1, total=trial.total)
        return trial.index, _source(x, "x", "3", i18n.text("abx.x_caption", lang)), prompt

    def start(
        self,
        audio_path,
        start_s,
        end_s,
        trials,
        level,
        request: gr.Request,
        progress=gr.Progress(),  # noqa: B008 - Gradio's way to ask for a progress bar
        a_codec=None,
    ):
        """Make B from the clip (or its region): the codec with ``level`` codebooks (None: all 16),
        a reference codec (an anchor id) or ``compare`` (the second checkpoint); A is the original, or
        with ``a_codec`` the codec's full-rate output. Then show A, B and the first X."""
        lang = i18n.language_of(request)
        source = need_file(audio_path, "what.audio", lang)
        with user_errors("action.abx_start", lang):
            what_b = _what_b(level)  # before any model work
            progress(0.1, desc=i18n.text("abx.preparing", lang))
            samples = _region(
                load_audio(source, self.limits).samples, start_s, end_s, self.engine.settings.abx_max_region_s
            )
            audio = audio_from_array(samples, SAMPLE_RATE, limits=self.limits)
            b_samples, name, b_caption = self._make_b(what_b, samples, audio, lang)
            a_samples, a_name, a_caption = samples, abx.A_ORIGINAL, i18n.text("abx.a_caption", lang)
            if a_codec:
                a_samples = self.engine.roundtrip(audio).decoded.samples
                a_name = abx.A_CODEC
                a_caption = i18n.text("compare.abx_a_codec", lang, bitrate=f"{bitrate_bps(NUM_CODEBOOKS):g}")
            token, trial = self.store.start(abx_store.clip_checksum(samples), name, int(trials), a_name=a_name)
            folder = self._folder(token)
            folder.mkdir(parents=True)
            _write_pcm16(folder / "a.wav", _dithered(a_samples))
            _write_pcm16(folder / "b.wav", _dithered(b_samples))
            index, x_player, prompt = self._trial_outputs(token, trial, lang)
        logger.info(
            "blind test started: %d trials on %.1f s, A %s, B %s", trial.total, samples.size / SAMPLE_RATE, a_name, name
        )
        players = (
            _transport_words(lang)
            + _source(folder / "a.wav", "a", "1", a_caption)
            + _source(folder / "b.wav", "b", "2", b_caption)
        )
        return token, index, players, x_player, prompt, "", None

    def _make_b(self, what_b, samples, audio, lang: str):
        """B's samples, its stored name and its caption."""
        kind, value = what_b
        if kind == "anchor":
            made = anchor_lib.make_anchors(samples, [value])
            if not made.made:
                raise CodecError(made.problems[0].message)
            label = compare_view.source_label({"id": value.id, "kind": "anchor"}, lang)
            return made.made[0].samples, value.label, i18n.text("compare.abx_b_anchor", lang, label=label)
        if kind == "compare":
            other = second.ready_second(self.engine)
            if other is None:
                raise i18n.TranslatedError("compare.abx_no_second")
            model = str(other.settings.model)
            return (
                other.roundtrip(audio).decoded.samples,
                f"second checkpoint {model}",  # i18n-exempt: stored with the answers, as level names are
                i18n.text("compare.abx_b_second", lang, model=Path(model).name),
            )
        b = self.engine.roundtrip(audio, codebooks=value).decoded.samples
        caption = i18n.text("abx.b_caption", lang, codebooks=value, bitrate=f"{bitrate_bps(value):g}")
        return b, abx.level_name(value), caption

    def answer(self, token, trial, choice, request: gr.Request):
        """Record one answer; show the next X, or nothing more once the last one is in."""
        lang = i18n.language_of(request)
        with user_errors("action.abx_answer", lang):
            number = _trial_number(trial)
            current = self.store.current(token or "")
            if current is None:
                return number, "", i18n.text("abx.finished", lang)
            if number != current.index:  # a repeated key press: the current trial stays (nothing written)
                return self._trial_outputs(token, current, lang)
            nxt = self.store.answer(token, current.index, choice)
            if nxt is None:
                for old in self._folder(token).glob("x-*.wav"):
                    old.unlink(missing_ok=True)
                return current.total, "", i18n.text("abx.finished", lang)
            return self._trial_outputs(token, nxt, lang)

    def answer_a(self, token, trial, request: gr.Request):
        return self.answer(token, trial, "A", request)

    def answer_b(self, token, trial, request: gr.Request):
        return self.answer(token, trial, "B", request)

    def results(self, token, request: gr.Request):
        """The score, p-value and sentence, each trial revealed, and this session's CSV; before
        the last answer only how many are left."""
        lang = i18n.language_of(request)
        with user_errors("action.abx_results", lang):
            answered, planned = self.store.progress(token or "")
            if answered < planned:  # not a hint of the score before the end: only how many are left
                text = i18n.text("abx.progress", lang, done=answered, total=planned)
                return text, None, {"answered": answered, "planned": planned}
            score = self.store.results(token)
            csv_path = self._folder(token) / f"blind-test-{secrets.token_hex(4)}.csv"
            self.store.export_csv(csv_path, token)
            rows = self.store.rows(token)
        lines = [
            f"### {html.escape(score_sentence(score, lang))}",
            i18n.text(_MEANINGS[score.verdict], lang),
            "",
            "| # | X | " + i18n.text("abx.your_answer", lang) + " | ✓ | s |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {r['trial'] + 1} | {r['x_is']} | {r['answer']} | {'✓' if r['correct'] else '✗'} | {r['seconds']:.1f} |"
            for r in rows
        ]
        return "\n".join(lines), str(csv_path), score.to_dict() | {"trials_detail": rows}


def score_sentence(score: abx.Score, lang: str) -> str:
    """The score's sentence (core.judging.abx words it in English for the CSV and the CLI) in ``lang``."""
    if lang == i18n.DEFAULT_LANGUAGE:
        return score.sentence
    words = i18n.text("abx.words_none" if score.trials == 0 else f"abx.words_{score.verdict}", lang)
    sentence = i18n.text(
        "abx.sentence", lang, correct=score.correct, trials=score.trials, words=words, p=f"{score.p_value:.3f}"
    )
    if not score.b_name:
        return sentence
    a, b = _name_words(score.a_name, lang), _name_words(score.b_name, lang)
    return sentence + i18n.text("compare.abx_sentence_ab", lang, a=a, b=b)


def _name_words(name: str, lang: str) -> str:
    """A stored name of A or B (core.judging.abx) in ``lang``: a level, the codec, the original, a
    reference codec; anything else (a checkpoint's path) as it is."""
    if name == abx.A_ORIGINAL:
        return i18n.text("compare.source.original", lang)
    if name == abx.A_CODEC:
        return i18n.text("compare.source.reconstruction", lang, bitrate=f"{CODEC_BPS / 1000:g}")
    anchor = next((a for a in anchor_lib.ANCHORS if a.label == name), None)
    if anchor is not None:
        return compare_view.source_label({"id": anchor.id, "kind": "anchor"}, lang)
    return _level_words(name, lang)


def _level_words(level: str, lang: str) -> str:
    """A stored level name ("2 of 16 codebooks, 275 bit/s", core.judging.abx.level_name) in ``lang``."""
    head, _, bitrate = level.partition(" codebooks, ")
    codebooks = head.split(" of ")[0]
    if not (codebooks.isdigit() and bitrate):
        return level  # another kind of B (a name): shown as it is
    return i18n.text("abx.level_name", lang, codebooks=codebooks, total=NUM_CODEBOOKS, bitrate=bitrate)


def _what_b(level) -> tuple[str, object]:
    """What B is, from the dropdown or an API caller: ("level", 1..16) (None or empty: the full
    rate), ("anchor", an Anchor) for a reference codec's id, or ("compare", None)."""
    if level is None or str(level).strip() == "":
        return "level", NUM_CODEBOOKS
    text = str(level).strip()
    if text.lower() == COMPARE_ID:
        return "compare", None
    try:
        value = float(text)
    except ValueError:
        anchors = anchor_lib.parse_anchors(text) if text.lower() in anchor_lib.anchor_names() else ()
        if len(anchors) == 1:
            return "anchor", anchors[0]
        raise i18n.TranslatedError(
            "compare.abx_bad_b", level=level, max=NUM_CODEBOOKS, anchors=", ".join(a.id for a in anchor_lib.ANCHORS)
        ) from None
    if not (value.is_integer() and 1 <= value <= NUM_CODEBOOKS):
        raise i18n.TranslatedError("abx.bad_level", level=level, max=NUM_CODEBOOKS)
    return "level", int(value)


def b_choices() -> list[tuple[str, str]]:
    """B beyond the codec's levels: each reference codec, and ② the second checkpoint (neutral
    labels: the dropdown is not translated; its info line says what ② is)."""
    return [(short_label(a.id), a.id) for a in anchor_lib.ANCHORS] + [(short_label(COMPARE_ID), COMPARE_ID)]


def _region(samples, start_s, end_s, max_region_s: float):
    """The selected part of the clip (end 0 or empty: to the end), at least MIN_REGION_S and at most
    ``max_region_s`` long (Settings.abx_max_region_s: a blind test compares short excerpts)."""
    start, end = _seconds(start_s), _seconds(end_s)
    start = max(start, 0.0)
    duration = samples.size / SAMPLE_RATE
    end = duration if end <= 0 else min(end, duration)
    if end - start < MIN_REGION_S:
        raise i18n.TranslatedError("abx.region_too_short", min=MIN_REGION_S, duration=duration)
    if end - start > max_region_s:
        raise i18n.TranslatedError("abx.region_too_long", max=max_region_s, length=end - start)
    return samples[int(start * SAMPLE_RATE) : int(end * SAMPLE_RATE)]


def _seconds(value) -> float:
    try:
        seconds = float(value or 0.0)
    except (TypeError, ValueError):
        seconds = math.nan
    if not math.isfinite(seconds):
        raise i18n.TranslatedError("abx.bad_region", value=value)
    return seconds


def _trial_number(value) -> int:
    """The trial number a client sent back: a whole number, else a message (not a traceback)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not (math.isfinite(number) and number.is_integer() and number >= 0):
        raise i18n.TranslatedError("abx.bad_trial", value=value)
    return int(number)


def _tpdf_lsb(size: int) -> np.ndarray:
    """Triangular dither of one 16-bit step: -1, 0 or +1 with chances 1/4, 1/2, 1/4 (fresh each call)."""
    rng = np.random.default_rng(secrets.randbits(64))
    return rng.integers(0, 2, size, dtype=np.int32) - rng.integers(0, 2, size, dtype=np.int32)


def _dithered(samples) -> np.ndarray:
    """Float samples as 16-bit steps with TPDF dither (what A and B are played from)."""
    x = np.asarray(samples, dtype=np.float64) * 32767.0
    return np.round(x + _tpdf_lsb(x.size)).astype(np.int64)


def _write_pcm16(path: Path, steps) -> Path:
    """16-bit steps (clipped to the range) as a new WAV; never overwrites."""
    with open(path, "xb") as f:
        sf.write(f, np.clip(steps, -32768, 32767).astype(np.int16), SAMPLE_RATE, format="WAV", subtype="PCM_16")
    return path
