"""What a running job has done so far, for the page's progress box (a box the person sees,
not Gradio's overlay on an empty Markdown of height 0): its stage, its fraction, how long it has run
and an honest time left. Gradio-free; the page polls it (``webui.tabs.roundtrip``'s timer).

The time left comes from the job's own pace once its decode has reported a step (fraction per
second since the encode's last step: the decode is most of a round trip, and the encode's share of
the bar is a guess from FLOPs, not a time), before that from this server's last job of the same kind (seconds per
second of audio); for a fresh server's first job, from the model's own readiness round trip
(``first_pace``: model seconds per audio second, a lower bound said as "about"); with none of these
it is not given. It is never Gradio's queue average, which knows nothing of the clip's length.

Between two steps (one model call on a CPU can take a minute) the time left counts down from the
last step's estimate instead of growing with the wait, and the bar moves with the clock toward the
end the time left implies (never past half of what is left): a box that stands still reads as frozen.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from webui.jobs.common import Progress

MAX_JOBS = 256  # jobs remembered at once (one per browser session); the oldest go first
ENCODE_KEYS = ("job.encoding", "job.encoding_part")  # the stages of a job's encode (webui.jobs.codec)
DECODE_KEYS = ("job.decoding", "job.decoding_part")
MIN_RATE_STEP = 0.03  # fraction the decode must have moved before its own pace is believed
MIN_RATE_S = 0.5  # ... and seconds
WAITING_LEFT_S = 1.0  # what the countdown says once it has run out before the next step came


@dataclass
class Snapshot:
    """One job's progress as the page shows it."""

    key: str  # the stage: a catalogue key (``job.*``)
    fields: dict  # the stage key's fields
    fraction: float  # 0..1 of the whole job
    elapsed_s: float
    left_s: float | None  # None: not known yet
    estimate: dict | None  # the engine's memory estimate's fields (webui.jobs.codec._preflight), once made
    done: bool = False
    audio_s: float | None = None  # the clip's length, once read
    refused: str | None = None  # the job ended with this message to the person (a refused file, an error)
    left_guessed: bool = False  # left_s is the model check's pace only (the page says "about")


@dataclass
class _Job:
    start: float
    key: str = "running.starting"  # until the job reports its first stage: what the click showed
    fields: dict = field(default_factory=dict)
    fraction: float = 0.0
    audio_s: float | None = None
    estimate: dict | None = None
    model_at: tuple[float, float] | None = None  # (time, fraction) of the encode's last step
    step_at: float | None = None  # when the fraction last moved
    shown: float = 0.0  # the fraction the box last showed (it never goes back)
    decoding: bool = False  # a decode step has been reported since
    done: bool = False
    end: float | None = None
    refused: str | None = None


class ProgressBoard:
    """The running jobs by key (a browser session), and the pace of the last finished one."""

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, first_pace: Callable[[], float | None] | None = None
    ):
        self._clock = clock
        self._first_pace = first_pace  # model seconds per audio second before any job has finished
        self._jobs: OrderedDict[str, _Job] = OrderedDict()
        self._lock = threading.Lock()
        self.pace_s_per_audio_s: float | None = None  # wall seconds per audio second, last finished job

    def start(self, job: str) -> None:
        with self._lock:
            self._jobs.pop(job, None)
            self._jobs[job] = _Job(self._clock())
            while len(self._jobs) > MAX_JOBS:
                self._jobs.popitem(last=False)

    def reporter(self, job: str | None, say: Progress) -> Progress:
        """``say`` (the job's progress callback) that also records each step on this board."""
        if job is None:
            return say

        def report(fraction: float, key: str, **fields) -> None:
            self.note(job, fraction, key, **fields)
            say(fraction, key, **fields)

        return report

    def note(self, job: str, fraction: float, key: str, **fields) -> None:
        with self._lock:
            entry = self._jobs.get(job)
            if entry is None or entry.done:
                return
            now = self._clock()
            if key.startswith("job.estimate."):  # the engine's estimate: the audio's length and the memory
                entry.estimate = dict(fields) | {"operation": key.removeprefix("job.estimate.")}
                entry.audio_s = _float(fields.get("seconds"))
            else:
                entry.key, entry.fields = key, dict(fields)
            if float(fraction) > entry.fraction:
                entry.fraction, entry.step_at = float(fraction), now
            if key in ENCODE_KEYS:  # the decode's pace is measured from the encode's last step on
                entry.model_at = (now, entry.fraction)
            elif key in DECODE_KEYS and entry.model_at is not None:
                entry.decoding = True

    def finish(self, job: str, audio_s: float | None = None) -> None:
        """The job ended; a successful one (``audio_s`` given) sets the pace the next estimate starts from."""
        with self._lock:
            entry = self._jobs.get(job)
            if entry is None:
                return
            entry.done, entry.end = True, self._clock()
            entry.fraction = 1.0 if audio_s else entry.fraction
            if audio_s and audio_s > 0:
                self.pace_s_per_audio_s = (self._clock() - entry.start) / audio_s

    def refuse(self, job: str, message: str) -> None:
        """The job ended with ``message`` to the person: the box says it where the button is."""
        with self._lock:
            entry = self._jobs.get(job)
            if entry is not None:
                entry.done, entry.end, entry.refused = True, entry.end or self._clock(), message

    def snapshot(self, job: str) -> Snapshot | None:
        with self._lock:
            entry = self._jobs.get(job)
            if entry is None:
                return None
            now = self._clock()
            left, guessed = (None, False) if entry.done else self._left_s(entry, now)
            entry.shown = max(entry.shown, _moving_fraction(entry, now, left))
            return Snapshot(
                entry.key,
                dict(entry.fields),
                entry.shown if not entry.done else entry.fraction,
                (entry.end or now) - entry.start,
                left,
                entry.estimate,
                entry.done,
                entry.audio_s,
                entry.refused,
                guessed,
            )

    def _left_s(self, entry: _Job, now: float) -> tuple[float | None, bool]:
        """Seconds left and whether they are the model check's guess."""
        if entry.model_at is not None and entry.decoding and entry.step_at is not None:
            t0, f0 = entry.model_at
            moved, took = entry.fraction - f0, entry.step_at - t0  # the pace up to the last step
            if moved >= MIN_RATE_STEP and took >= MIN_RATE_S:
                at_step = (1.0 - entry.fraction) * took / moved
                return max(WAITING_LEFT_S, at_step - (now - entry.step_at)), False
        if self.pace_s_per_audio_s is not None and entry.audio_s:
            return max(0.0, self.pace_s_per_audio_s * entry.audio_s - (now - entry.start)), False
        pace = self._first_pace() if self._first_pace is not None and entry.audio_s else None
        if pace and entry.audio_s:
            return max(0.0, pace * entry.audio_s - (now - entry.start)), True
        return None, False


def _moving_fraction(entry: _Job, now: float, left_s: float | None) -> float:
    """The fraction the clock says the job has reached (elapsed over elapsed plus the time left), at most
    half-way from the last reported fraction to the end; the reported fraction when nothing is known."""
    if entry.done or left_s is None:
        return entry.fraction
    elapsed = now - entry.start
    by_clock = elapsed / (elapsed + left_s) if elapsed + left_s > 0 else 0.0
    return max(entry.fraction, min(by_clock, entry.fraction + 0.5 * (1.0 - entry.fraction)))


def _float(value) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None
