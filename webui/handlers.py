"""Gradio event handlers: parse the inputs, call the engine (through ``jobs``), format the
outputs. Every failure leaves here as a ``gr.Error`` whose text says what to do."""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import gradio as gr

from core.audio import AudioLimits
from core.doctor import run_doctor
from core.errors import CodecError

from . import doctor_panel, i18n, jobs, storage, url_input
from . import formatting as fmt
from .workspace import Workspace

if TYPE_CHECKING:
    from core.engine import Engine

logger = logging.getLogger(__name__)


@contextmanager
def user_errors(action: str, lang: str = i18n.DEFAULT_LANGUAGE, temp_root: Path | None = None):
    """Turn any exception into a gr.Error the user can act on, in ``lang``; log the unexpected ones.

    ``action`` is a catalogue key (``action.*``). Errors made in webui/ carry their own key
    (``i18n.TranslatedError``). Errors from core/ are English by design (the CLI shows them too):
    they get a translated lead sentence chosen by their class (``error.lead.<Class>``), followed
    by the English detail, which names the file or setting and the fix. ``temp_root``: where
    the request writes, so that a full disk is named as the cause."""
    try:
        yield
    except gr.Error:
        raise
    except i18n.TranslatedError as e:
        logger.warning("%s refused: %s", i18n.text(action), e)
        raise gr.Error(e.in_language(lang), print_exception=False) from e
    except CodecError as e:
        logger.warning("%s refused: %s", i18n.text(action), e)
        raise gr.Error(codec_error_text(e, lang), print_exception=False) from e
    except Exception as e:
        if temp_root is not None and storage.is_disk_full(e, temp_root):
            logger.error("%s failed: the disk under %s is full (%r)", i18n.text(action), temp_root, e)
            message = i18n.text("hardening.disk_full", lang, action=i18n.text(action, lang))
            raise gr.Error(message, print_exception=False) from e
        logger.exception("unexpected error while %s", i18n.text(action))
        message = i18n.text("error.generic", lang, action=i18n.text(action, lang), kind=type(e).__name__)
        raise gr.Error(message, print_exception=False) from e


def codec_error_text(error: CodecError, lang: str) -> str:
    """A core error for the page: the lead sentence of its class (or the nearest base class that
    has one) in ``lang``, then core's English detail."""
    for cls in type(error).__mro__:
        key = f"error.lead.{cls.__name__}"
        if key in i18n.catalogues()[i18n.DEFAULT_LANGUAGE]:
            return i18n.text(key, lang, detail=str(error))
    return str(error)  # not reached: error.lead.CodecError exists


def _need_file(value, what: str, lang: str) -> Path:
    """The path Gradio handed us, or a gr.Error asking for the input (``what``: a ``what.*`` key)."""
    if isinstance(value, dict):  # gradio_client may send a FileData dict
        value = value.get("path")
    if not value:
        key = "error.no_token_file" if what == "what.token_file" else "error.no_audio"
        raise gr.Error(i18n.text(key, lang, what=i18n.text(what, lang)))
    path = Path(value)
    if path.is_dir():  # an upload named "." or "/" ends up as its folder
        raise gr.Error(i18n.text("hardening.no_file_name", lang, what=i18n.text(what, lang)))
    if not path.is_file():
        raise gr.Error(i18n.text("error.file_gone", lang, what=i18n.text(what, lang)))
    return path


class RoundTripView(NamedTuple):
    """The round trip's outputs, named once: the handler returns one, app.py wires the page's
    components in this order by building one of components, the tests read it by name."""

    original: Any  # player: the codec's input as 24 kHz mono (a WAV path)
    reconstruction: Any  # player: the decoder's output (a WAV path)
    timing: Any  # Markdown: model time and ours
    facts: Any  # Markdown: what was done to the input
    tokens: Any  # Markdown: frames, rates, compression
    spectrogram: Any  # image: original / reconstruction / difference (a PNG path)
    downloads: Any  # files: the token file and the reconstruction
    details: Any  # JSON: input facts, token summary, timing


@dataclass
class Handlers:
    """One per app; holds the engine and where request files go. No other state."""

    engine: Engine  # the one model owner
    workspace: Workspace
    url_policy: url_input.UrlPolicy | None = None  # None: URL input is off

    @property
    def limits(self) -> AudioLimits:
        return self.engine.settings.audio_limits()

    # ---- status -----------------------------------------------------------------------
    def status(self, request: gr.Request | None = None):
        """The status bar as it stands (no new check), in the browser's language."""
        report = self.engine.last_report.to_dict() if self.engine.last_report else None
        html = fmt.status_html(report, self.engine.info(), i18n.language_of(request))
        return html, {"readiness": report, "engine": self.engine.info()}

    def readiness(self, request: gr.Request | None = None, progress=gr.Progress()):
        """Re-run the three checks; loads the model first if it is not loaded."""
        lang = i18n.language_of(request)
        with user_errors("action.readiness", lang):
            progress(0.1, desc=i18n.text("progress.readiness", lang))
            self.engine.warm_up()
        return self.status(request)

    # ---- jobs -------------------------------------------------------------------------
    def roundtrip(self, audio_path, request: gr.Request | None = None, progress=gr.Progress()):
        """Encode → decode: players, facts, token summary, spectrograms, downloads."""
        lang = i18n.language_of(request)
        source = _need_file(audio_path, "what.audio", lang)
        with user_errors("action.roundtrip", lang, self.workspace.root):
            out = jobs.roundtrip(
                self.engine, source, self.workspace.new_dir("roundtrip"), self.limits, i18n.progress_in(lang, progress)
            )
        logger.info(
            "round trip of %s: model %.2f s, ours %.3f s", source.name, out.timing["model_s"], out.timing["ui_s"]
        )
        details = {"input": out.facts, "tokens": out.summary, "timing": out.timing}
        return RoundTripView(
            original=str(out.original_wav),
            reconstruction=str(out.reconstruction_wav),
            timing=fmt.timing_markdown(out.timing, lang),
            facts=fmt.facts_markdown(out.facts, lang),
            tokens=fmt.tokens_markdown(out.summary, lang),
            spectrogram=str(out.spectrogram_png),
            downloads=[str(out.token_file), str(out.reconstruction_wav)],
            details=details,
        )

    def metrics(self, original_path, reconstruction_path, request: gr.Request | None = None, progress=gr.Progress()):
        """Objective metrics of a reconstruction against its original (the round trip's
        follow-up; the API accepts any two clips)."""
        lang = i18n.language_of(request)
        original = _need_file(original_path, "what.original", lang)
        reconstruction = _need_file(reconstruction_path, "what.reconstruction", lang)
        with user_errors("action.metrics", lang):
            out = jobs.measure(original, reconstruction, self.limits, i18n.progress_in(lang, progress))
        return fmt.metrics_markdown(out.metrics, out.seconds, lang), {"metrics": out.metrics, "seconds": out.seconds}

    @staticmethod
    def clear_metrics():
        """Blank the previous clip's metrics while a new round trip runs."""
        return "", None

    def encode(self, audio_path, request: gr.Request | None = None, progress=gr.Progress()):
        lang = i18n.language_of(request)
        source = _need_file(audio_path, "what.audio", lang)
        with user_errors("action.encode", lang, self.workspace.root):
            out = jobs.encode(
                self.engine, source, self.workspace.new_dir("encode"), self.limits, i18n.progress_in(lang, progress)
            )
        details = {"input": out.facts, "tokens": out.summary, "timing": out.timing}
        text = fmt.facts_markdown(out.facts, lang) + "\n\n" + fmt.tokens_markdown(out.summary, lang)
        return str(out.token_file), text, str(out.heatmap_png), details

    def decode(self, token_path, request: gr.Request | None = None, progress=gr.Progress()):
        lang = i18n.language_of(request)
        source = _need_file(token_path, "what.token_file", lang)
        with user_errors("action.decode", lang, self.workspace.root):
            out = jobs.decode(self.engine, source, self.workspace.new_dir("decode"), i18n.progress_in(lang, progress))
        details = {"token_file": out.meta, "tokens": out.summary, "timing": out.timing}
        return str(out.wav), fmt.token_file_markdown(out.meta, out.summary, lang), str(out.spectrogram_png), details

    def fetch_url(self, url: str, request: gr.Request | None = None, progress=gr.Progress()):
        """Download audio from a URL into a request folder (only when enabled)."""
        lang = i18n.language_of(request)
        if self.url_policy is None:
            raise gr.Error(i18n.text("error.url_off", lang))
        with user_errors("action.fetch", lang, self.workspace.root):
            progress(0.1, desc=i18n.text("progress.downloading", lang))
            path = url_input.fetch(url, self.workspace.new_dir("url"), self.url_policy)
        return str(path)

    # ---- system -----------------------------------------------------------------------
    def clear_vram(self, request: gr.Request | None = None):
        lang = i18n.language_of(request)
        with user_errors("action.clear_vram", lang):
            result = self.engine.clear_vram()
        return fmt.vram_markdown(result, lang), result

    def doctor(self, request: gr.Request | None = None):
        """Every doctor check (``python -m core doctor``) as a panel, plus its JSON report."""
        lang = i18n.language_of(request)
        with user_errors("action.doctor", lang):
            report = run_doctor(self.engine, doctor_panel.options_for(request, self.workspace.root)).to_dict()
        return doctor_panel.panel_html(report, lang), report

    def stats(self, request: gr.Request | None = None):
        lang = i18n.language_of(request)
        with user_errors("action.stats", lang):
            stats = self.engine.stats()
        return fmt.stats_markdown(stats, lang), stats
