"""Gradio event handlers: parse the inputs, call the engine (through ``jobs``), format the
outputs. Every failure leaves here as a ``gr.Error`` whose text says what to do."""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from core.audio import AudioLimits
from core.errors import CodecError

from . import formatting as fmt
from . import i18n, jobs, storage, url_input
from .workspace import Workspace

logger = logging.getLogger(__name__)

GENERIC_ERROR = ("Something unexpected went wrong while {action} ({kind}). The server is still "
                 "running: try again, try another file, or ask the operator to check the server log.")


@contextmanager
def user_errors(action: str, temp_root: Path | None = None, lang: str = i18n.DEFAULT_LANGUAGE):
    """Turn any exception into a gr.Error the user can act on; log the unexpected ones.
    ``temp_root``: where the request writes, to name a full disk as the cause."""
    try:
        yield
    except gr.Error:
        raise
    except CodecError as e:
        logger.warning("%s refused: %s", action, e)
        raise gr.Error(str(e), print_exception=False) from e
    except Exception as e:
        if temp_root is not None and storage.is_disk_full(e, temp_root):
            logger.error("%s failed: the disk under %s is full (%r)", action, temp_root, e)
            raise gr.Error(i18n.text("hardening.disk_full", lang, action=action), print_exception=False) from e
        logger.exception("unexpected error while %s", action)
        raise gr.Error(GENERIC_ERROR.format(action=action, kind=type(e).__name__), print_exception=False) from e


def _need_file(value, what: str) -> Path:
    """The path Gradio handed us, or a gr.Error asking for the input."""
    if isinstance(value, dict):  # gradio_client may send a FileData dict
        value = value.get("path")
    if not value:
        raise gr.Error(f"No {what} yet: {'upload a .npz token file' if 'token' in what else 'upload or record audio'} first.")
    path = Path(value)
    if path.is_dir():  # an upload named "." or "/" ends up as its folder
        raise gr.Error(f"The uploaded {what} has no file name; give the file a name and upload it again.")
    if not path.is_file():
        raise gr.Error(f"The uploaded {what} is no longer on the server; upload it again.")
    return path


@dataclass
class Handlers:
    """One per app; holds the engine and where request files go. No other state."""

    engine: object  # core.engine.Engine
    workspace: Workspace
    url_policy: url_input.UrlPolicy | None = None  # None: URL input is off

    @property
    def limits(self) -> AudioLimits:
        s = self.engine.settings
        return AudioLimits(max_duration_s=s.max_duration_s, max_file_bytes=s.max_file_bytes)

    # ---- status -----------------------------------------------------------------------
    def status(self):
        """The status bar as it stands (no new check)."""
        report = self.engine.last_report.to_dict() if self.engine.last_report else None
        return fmt.status_html(report, self.engine.info()), {"readiness": report, "engine": self.engine.info()}

    def readiness(self, progress=gr.Progress()):
        """Re-run the three checks; loads the model first if it is not loaded."""
        with user_errors("running the readiness checks"):
            progress(0.1, desc="Loading the model and running a test round trip")
            self.engine.warm_up()
        return self.status()

    # ---- jobs -------------------------------------------------------------------------
    def roundtrip(self, audio_path, progress=gr.Progress()):
        """Encode → decode: players, facts, token summary, spectrograms, downloads."""
        source = _need_file(audio_path, "audio")
        with user_errors("running the round trip", self.workspace.root):
            out = jobs.roundtrip(self.engine, source, self.workspace.new_dir("roundtrip"), self.limits, progress)
        logger.info("round trip of %s: model %.2f s, ours %.3f s", source.name, out.timing["model_s"], out.timing["ui_s"])
        details = {"input": out.facts, "tokens": out.summary, "timing": out.timing}
        return (
            str(out.original_wav), str(out.reconstruction_wav), fmt.timing_markdown(out.timing),
            fmt.facts_markdown(out.facts), fmt.tokens_markdown(out.summary), str(out.spectrogram_png),
            [str(out.token_file), str(out.reconstruction_wav)], details,
        )

    def metrics(self, original_path, reconstruction_path, progress=gr.Progress()):
        """Objective metrics of a reconstruction against its original (the round trip's
        follow-up; the API accepts any two clips)."""
        original = _need_file(original_path, "original audio")
        reconstruction = _need_file(reconstruction_path, "reconstruction audio")
        with user_errors("computing the metrics"):
            out = jobs.measure(original, reconstruction, self.limits, progress)
        return fmt.metrics_markdown(out.metrics, out.seconds), {"metrics": out.metrics, "seconds": out.seconds}

    @staticmethod
    def clear_metrics():
        """Blank the previous clip's metrics while a new round trip runs."""
        return "", None

    def encode(self, audio_path, progress=gr.Progress()):
        source = _need_file(audio_path, "audio")
        with user_errors("encoding", self.workspace.root):
            out = jobs.encode(self.engine, source, self.workspace.new_dir("encode"), self.limits, progress)
        details = {"input": out.facts, "tokens": out.summary, "timing": out.timing}
        return (str(out.token_file), fmt.facts_markdown(out.facts) + "\n\n" + fmt.tokens_markdown(out.summary),
                str(out.heatmap_png), details)

    def decode(self, token_path, progress=gr.Progress()):
        source = _need_file(token_path, "token file")
        with user_errors("decoding", self.workspace.root):
            out = jobs.decode(self.engine, source, self.workspace.new_dir("decode"), progress)
        details = {"token_file": out.meta, "tokens": out.summary, "timing": out.timing}
        return str(out.wav), fmt.token_file_markdown(out.meta, out.summary), str(out.spectrogram_png), details

    def fetch_url(self, url: str, progress=gr.Progress()):
        """Download audio from a URL into a request folder (only when enabled)."""
        if self.url_policy is None:
            raise gr.Error("Audio from a URL is switched off on this server; download the file and upload it.")
        with user_errors("fetching the URL", self.workspace.root):
            progress(0.1, desc="Downloading")
            path = url_input.fetch(url, self.workspace.new_dir("url"), self.url_policy)
        return str(path)

    # ---- system -----------------------------------------------------------------------
    def clear_vram(self):
        with user_errors("clearing VRAM"):
            result = self.engine.clear_vram()
        return fmt.vram_markdown(result), result

    def stats(self):
        with user_errors("reading system stats"):
            stats = self.engine.stats()
        return fmt.stats_markdown(stats), stats
