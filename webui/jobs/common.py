"""What the Gradio-free jobs share: the progress callback and safe file names for what they write."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from core.names import safe_name

Progress = Callable[..., None]  # progress(fraction, key, **fields): a catalogue key (webui.i18n.progress_in)
STEM_CHARS = 60  # longest name stem we keep from the input's file name
REQUEST_PREFIX = "req-"  # a request folder's name starts so (webui.serving.workspace makes them; only they are deleted)


def quiet(*_args, **_kwargs) -> None:
    """A progress callback that shows nothing (jobs run outside a Gradio event)."""
    return None


def stem_of(path: Path | str) -> str:
    """A safe file-name stem from the input's name ("my clip (1).mp3" -> "my_clip_1")."""
    return safe_name(Path(path).stem, "audio", max_chars=STEM_CHARS, dots=False)
