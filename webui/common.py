"""What every tab shares: the base of the tabs' handler classes (the engine and the request
folders), turning errors into messages the user can act on (the one place), and asking for a
missing input. What the Gradio-free jobs share is in ``webui.jobs.common``.

Tabs follow one pattern: ``webui/tabs/<tab>.py`` builds the tab and holds its handlers (a
``TabHandlers``), ``webui/jobs/<concern>.py`` does the work without Gradio.
"""

from __future__ import annotations

import logging
import re
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import gradio as gr

from core.errors import CodecError
from core.settings import AudioLimits
from webui import i18n
from webui.serving import storage
from webui.serving.workspace import Workspace
from webui.views.words import codec_error_text

if TYPE_CHECKING:
    from core.model.engine import Engine

logger = logging.getLogger(__name__)

# Components come and go by a class (webui/static/page.css), not by visibility: Gradio 6.17 never
# shows a component that was hidden when the page was built, or hidden by an event while hidden
# (and freezes the page if it is a box).
GONE = ["cw-gone"]


@dataclass
class TabHandlers:
    """The base of every tab's handlers: the engine (the one model owner) and the request folders.
    No other state."""

    engine: Engine
    workspace: Workspace

    @property
    def limits(self) -> AudioLimits:
        return self.engine.settings.audio_limits()


@contextmanager
def user_errors(action: str, lang: str = i18n.DEFAULT_LANGUAGE, temp_root: Path | None = None):
    """Turn any exception into a gr.Error the user can act on, in ``lang``; log the unexpected ones.

    ``action`` is a catalogue key (``action.*``). Errors made in webui/ carry their own key
    (``i18n.TranslatedError``). Errors from core/ are English by design (the CLI shows them too):
    they get a translated lead sentence chosen by their class (``error.lead.<Class>``), followed
    by the detail, which names the file or setting and the fix: in ``lang`` where
    ``webui.views.words`` knows the sentence, else as core wrote it; never a library's errno. ``temp_root``: where
    the request writes, so that a full disk is named as the cause."""
    try:
        yield
    except gr.Error as e:
        if e.title == DEFAULT_ERROR_TITLE:  # raised bare in a handler: the toast's title in the page's language
            e.title = _title(lang)
        raise
    except i18n.TranslatedError as e:
        logger.warning("%s refused: %s", i18n.text(action), e)
        raise gr.Error(e.in_language(lang), title=_title(lang), print_exception=False) from e
    except CodecError as e:
        logger.warning("%s refused: %s", i18n.text(action), e)
        raise gr.Error(_plain(codec_error_text(e, lang)), title=_title(lang), print_exception=False) from e
    except Exception as e:
        if temp_root is not None and storage.is_disk_full(e, temp_root):
            logger.error("%s failed: the disk under %s is full (%r)", i18n.text(action), temp_root, e)
            message = i18n.text("hardening.disk_full", lang, action=i18n.text(action, lang))
            raise gr.Error(message, title=_title(lang), print_exception=False) from e
        logger.exception("unexpected error while %s", i18n.text(action))
        message = i18n.text("error.generic", lang, action=i18n.text(action, lang), kind=type(e).__name__)
        raise gr.Error(message, title=_title(lang), print_exception=False) from e


_TICKED = re.compile(r"`([^`]+)`")
DEFAULT_ERROR_TITLE = "Error"  # gr.Error's own title, English whatever the page's language


def _plain(message: str) -> str:
    """A toast shows text, not Markdown: `python -m core ...` in core's sentences becomes “python -m core ...”."""
    return _TICKED.sub(r"“\1”", message)


def refusal(message: str, lang: str) -> gr.Error:
    """The error toast a handler raises for a refusal it words itself, titled in ``lang``."""
    return gr.Error(message, title=_title(lang), print_exception=False)


def _title(lang: str) -> str:
    """The error toast's title in ``lang`` (Gradio's own is the English "Error")."""
    return i18n.text("running.error_title", lang)


def need_file(value, what: str, lang: str) -> Path:
    """The path Gradio handed us, or a gr.Error asking for the input (``what``: a ``what.*`` key)."""
    if isinstance(value, dict):  # gradio_client may send a FileData dict
        value = value.get("path")
    if not value:
        key = "error.no_token_file" if what == "what.token_file" else "error.no_audio"
        raise gr.Error(i18n.text(key, lang, what=i18n.text(what, lang)), title=_title(lang))
    path = Path(value)
    if path.is_dir():  # an upload named "." or "/" ends up as its folder
        raise gr.Error(i18n.text("hardening.no_file_name", lang, what=i18n.text(what, lang)), title=_title(lang))
    if not path.is_file():
        raise gr.Error(i18n.text("error.file_gone", lang, what=i18n.text(what, lang)), title=_title(lang))
    return path


def path_of(value):
    """The path in what Gradio hands over for a file: a path, a FileData dict or object."""
    if isinstance(value, dict):
        return value.get("path")
    return getattr(value, "path", value)


def afterwards(event, then, failure: dict | None = None, **kwargs):
    """``then`` (with ``kwargs``) after ``event`` succeeds; after it fails, the same step, or the step
    ``failure`` names (``.failure``'s keyword arguments, its function as ``fn``). Returns the
    success step (chain on it).

    Gradio 6 runs a ``.then`` step only after its event succeeded (or was cancelled), never after an
    error. A step that gives the page back (a button enabled again, a progress box put away) therefore
    needs a ``.failure`` twin, or one refused file leaves the page busy for good. Every ``.then`` in
    webui/ is wired here (tests/webui/test_event_chains.py); a step that only follows a success is a
    ``.success``. A twin made from ``then`` gets its ``api_name`` with ``_failed``."""
    if failure is None:
        failure = dict(kwargs, fn=then)
        if failure.get("api_name"):
            failure["api_name"] = f"{failure['api_name']}_failed"
    event.failure(**{"api_visibility": "private", **failure})
    return event.then(then, **kwargs)
