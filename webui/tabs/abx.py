"""The blind test's server side: can a listener tell the original from the codec's output?

A is the original (or the codec's full-rate output), B the reconstruction, X one of them at random
(core.listening.abx plans it and keeps the answers, with what A and B are, in SQLite). B is the full
rate (16 codebooks) or a ladder level: the decode of the clip's codes with their first k codebooks
(core.nn.ladder), to find the lowest bitrate a listener cannot tell apart; or a reference codec made
from the same region (core.anchors), or the second checkpoint's reconstruction (core.model.second). The page (``webui.tabs.abx_page``) plays A, B and X in one transport without
waveforms, and X is written anew for every trial under a name only the session's token gives, so
neither the picture nor the file name gives the answer away. Nothing is shown about the answers
until the last one is in: before it, no output carries the score, only how many are left.

A and B are 16-bit WAVs with their own dither, and X is written for each trial from A's
or B's samples with a fresh dither (one least significant bit, -96 dBFS: inaudible), so X's bytes
(and hash) never equal A's or B's; a script can still tell them apart by decoding and comparing
samples, a listener cannot. A repeated or stale answer writes nothing. The SQLite store is never
touched on the model's queue (``AbxStore.start`` writes nothing).

The session token lives only in the page (a hidden textbox) and in the API caller's hands; the
server keeps its hash. The trial number travels with each answer, so a double key press cannot
answer the next trial unheard.
"""

from __future__ import annotations

import html
import json
import logging
import math
import secrets
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import gradio as gr

from core import anchors as core_anchors
from core.audio import rates
from core.audio.files import audio_from_array, load_audio
from core.codec import NUM_CODEBOOKS, SAMPLE_RATE, bitrate_bps
from core.judging.sources import COMPARE_ID, LEVEL, short_label
from core.listening import abx, abx_store, pooled_stats
from webui import i18n
from webui.common import TabHandlers, need_file, user_errors
from webui.jobs import abx as abx_jobs
from webui.serving.workspace import PREFIX
from webui.views import compare_view

logger = logging.getLogger(__name__)

MIN_REGION_S = abx_jobs.MIN_REGION_S
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
    trusted: frozenset[str] = frozenset()  # --trusted-proxies: whose X-Forwarded-For names the client

    def __post_init__(self):
        settings = self.engine.settings
        self.store = abx_store.AbxStore(settings.data_dir, session_ttl_s=settings.abx_session_ttl_s)

    def _folder(self, token: str) -> Path:
        """The session's media folder, found from the token alone (no path ever comes from the client)."""
        return abx_jobs.session_folder(self.workspace.root, PREFIX, token)

    def _x(self, token: str, trial: abx_store.Trial) -> Path:
        """X of this trial (``webui.jobs.abx.write_x``), or a message when the audio was cleaned up."""
        x = abx_jobs.write_x(self._folder(token), token, trial.index, trial.x_is)
        if x is None:
            raise i18n.TranslatedError("abx.audio_gone")
        return x

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
        with user_errors("action.abx_start", lang), job_words():
            what_b = _what_b(level)  # before any model work
            progress(0.1, desc=i18n.text("abx.preparing", lang))
            samples = abx_jobs.region(
                load_audio(source, self.limits).samples, start_s, end_s, self.engine.settings.abx_max_region_s
            )
            audio = audio_from_array(samples, SAMPLE_RATE, limits=self.limits)
            b = abx_jobs.make_b(self.engine, what_b, samples, audio)
            b_caption = _b_caption(what_b, b, lang)
            a_samples, a_rate, a_source = None, SAMPLE_RATE, abx.A_ORIGINAL
            a_caption = i18n.text("abx.a_caption", lang)
            if a_codec:
                decoded = self.engine.roundtrip(audio).decoded
                a_samples, a_rate, a_source = decoded.samples, decoded.sample_rate, abx.A_CODEC
                a_caption = i18n.text("compare.abx_a_codec", lang, bitrate=f"{bitrate_bps(NUM_CODEBOOKS):g}")
            limits, region = self.limits, (start_s, end_s, self.engine.settings.abx_max_region_s)
            a_samples, b_samples, rate = abx_jobs.pair_at_one_rate(
                lambda r: abx_jobs.region(rates.read_at(source, limits, r), *region, rate_hz=r),
                a_samples,
                a_rate,
                b,
                samples.size,
                self.engine.output_rate,
            )
            token, trial = self.store.start(
                abx_store.clip_checksum(samples), b.source_id, int(trials), a_source=a_source, b_detail=b.detail
            )
            folder = self._folder(token)
            abx_jobs.write_pair(folder, a_samples, b_samples, rate)
            index, x_player, prompt = self._trial_outputs(token, trial, lang)
        logger.info(
            "blind test started: %d trials on %.1f s, A %s, B %s",
            trial.total,
            samples.size / SAMPLE_RATE,
            a_source,
            b.source_id,
        )
        players = (
            _transport_words(lang)
            + _source(folder / "a.wav", "a", "1", a_caption)
            + _source(folder / "b.wav", "b", "2", b_caption)
        )
        return token, index, players, x_player, prompt, "", None

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
                abx_jobs.forget_x(self._folder(token))
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
    """The score's sentence in ``lang``, A and B worded by their source ids (core.listening.abx words
    it in English for the CSV and the CLI)."""
    words = i18n.text("abx.words_none" if score.trials == 0 else f"abx.words_{score.verdict}", lang)
    sentence = i18n.text(
        "abx.sentence",
        lang,
        correct=score.correct,
        trials=score.trials,
        words=words,
        p=pooled_stats.p_text(score.p_value),
    )
    if not score.b_source:
        return sentence
    a, b = source_words(score.a_source, lang), source_words(score.b_source, lang)
    return sentence + i18n.text("abx.sentence_ab", lang, a=a, b=b)


def source_words(source_id: str, lang: str) -> str:
    """A stored source id (A or B) in ``lang``, by id (``compare_view.source_label``)."""
    kind = abx.source_kind(source_id)
    if kind == LEVEL:
        k = int(source_id[1:])
        return i18n.text("abx.level_name", lang, codebooks=k, total=NUM_CODEBOOKS, bitrate=f"{bitrate_bps(k):g}")
    if not kind:
        return source_id or "?"
    return compare_view.source_label({"id": source_id, "kind": kind}, lang)


def _b_caption(what_b, b: abx_jobs.MadeB, lang: str) -> str:
    """B's caption in the transport."""
    kind, value = what_b
    if kind == "anchor":
        return i18n.text("compare.abx_b_anchor", lang, label=source_words(b.source_id, lang))
    if kind == "compare":
        return i18n.text("compare.abx_b_second", lang, model=Path(b.detail).name)
    return i18n.text("abx.b_caption", lang, codebooks=value, bitrate=f"{bitrate_bps(int(value)):g}")


@contextmanager
def job_words():
    """The jobs' input errors (a catalogue key, ``webui.jobs.abx.BlindInputError``) as translated errors."""
    try:
        yield
    except abx_jobs.BlindInputError as e:
        raise i18n.TranslatedError(e.key, **e.fields) from e


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
        anchors = core_anchors.parse_anchors(text) if text.lower() in core_anchors.anchor_names() else ()
        if len(anchors) == 1:
            return "anchor", anchors[0]
        raise i18n.TranslatedError(
            "compare.abx_bad_b", level=level, max=NUM_CODEBOOKS, anchors=", ".join(a.id for a in core_anchors.ANCHORS)
        ) from None
    if not (value.is_integer() and 1 <= value <= NUM_CODEBOOKS):
        raise i18n.TranslatedError("abx.bad_level", level=level, max=NUM_CODEBOOKS)
    return "level", int(value)


def b_choices() -> list[tuple[str, str]]:
    """B beyond the codec's levels: each reference codec, and ② the second checkpoint (neutral
    labels: the dropdown is not translated; its info line says what ② is)."""
    return [(short_label(a.id), a.id) for a in core_anchors.ANCHORS] + [(short_label(COMPARE_ID), COMPARE_ID)]


def _trial_number(value) -> int:
    """The trial number a client sent back: a whole number, else a message (not a traceback)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not (math.isfinite(number) and number.is_integer() and number >= 0):
        raise i18n.TranslatedError("abx.bad_trial", value=value)
    return int(number)
