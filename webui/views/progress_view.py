"""The round trip's progress box in the page's language: the stage, a bar with its share done, how
long the job has run, the time left when it is known (``webui.jobs.progress``), and the engine's
memory estimate for it. A block with height of its own, under *Encode → Decode*."""

from __future__ import annotations

import html

from webui.i18n import DEFAULT_LANGUAGE, filled, text
from webui.jobs.progress import Snapshot
from webui.views import words


def clock(seconds: float) -> str:
    """0:07, 1:05, 12:40: minutes and seconds, as a person reads a wait."""
    whole = max(0, int(round(seconds)))
    return f"{whole // 60}:{whole % 60:02d}"


def starting(lang: str = DEFAULT_LANGUAGE) -> str:
    """What the box says from the click until the server's first step (drawn at once, no wait)."""
    return _box(text("running.starting", lang), 0.0, text("running.elapsed", lang, elapsed=clock(0)), "", "starting")


def running(snap: Snapshot, lang: str = DEFAULT_LANGUAGE) -> str:
    """The box while the job runs."""
    key = snap.key.removesuffix("_part")  # "Encoding (100%)" beside the whole job's 26% read as a contradiction
    stage = text(key, lang, **filled(snap.fields, lang))
    times = text("running.elapsed", lang, elapsed=clock(snap.elapsed_s))
    if snap.left_s is not None:
        key = "running.left_guess" if snap.left_guessed else "running.left"
        times += " · " + text(key, lang, left=clock(max(1.0, snap.left_s)))
    elif snap.fraction < 0.9:
        times += " · " + text("running.left_unknown", lang)
    note = ""
    if snap.estimate:
        note = words.estimate(snap.estimate, lang)
    return _box(stage, snap.fraction, times, note, "running")


def done(seconds: float, audio_s: float | None, lang: str = DEFAULT_LANGUAGE) -> str:
    """One quiet line once the job has ended well (the result's own lines say the rest)."""
    if audio_s:
        line = text("running.done_clip", lang, took=clock(seconds), clip=clock(audio_s))
    else:
        line = text("running.done", lang, took=clock(seconds))
    return f"<div class='cw-progress cw-progress-done' data-state='done'>{html.escape(line)}</div>"


def refused(message: str, lang: str = DEFAULT_LANGUAGE, before_the_job: bool = False) -> str:
    """The job ended without a result, or (``before_the_job``) the file just given cannot be used:
    why, under the button, until the next file or job (a toast goes away after a few seconds)."""
    key = "running.refused_file" if before_the_job else "running.refused"
    line = text(key, lang, message=message.strip())
    return f"<div class='cw-progress cw-progress-refused' data-state='refused' role='alert'>{html.escape(line)}</div>"


def _box(stage: str, fraction: float, times: str, note: str, state: str) -> str:
    percent = max(0, min(100, round(100 * fraction)))
    note_html = f"<div class='cw-progress-note'>{html.escape(note)}</div>" if note else ""
    return (
        f"<div class='cw-progress' data-state='{state}' role='status'>"
        f"<div class='cw-progress-line'><b>{html.escape(stage)}</b> <span class='cw-progress-pc'>{percent}%</span></div>"
        f"<div class='cw-progress-bar' role='progressbar' aria-valuemin='0' aria-valuemax='100' "
        f"aria-valuenow='{percent}' aria-label='{html.escape(stage)}'><span style='width:{percent}%'></span></div>"
        f"<div class='cw-progress-times'>{html.escape(times)}</div>{note_html}</div>"
    )
