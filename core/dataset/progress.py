"""Progress of a tokenize job: files/s, audio hours/s and ETA while it runs; a summary at the end."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from core.codec import SAMPLE_RATE
from core.dataset.shards import Done, Failed

logger = logging.getLogger(__name__)

SECONDS_PER_HOUR = 3600.0  # for audio hours


@dataclass
class Progress:
    """Counts results and drives one tqdm bar (files); ``show=False`` keeps it silent (tests, logs)."""

    show: bool = True  # draw a tqdm bar on stderr
    total: int = 0  # files this run has to do
    already: int = 0  # files finished by an earlier run (resume)
    files: int = 0  # results so far (codes or errors)
    errors: int = 0  # of which errors
    audio_s: float = 0.0  # seconds of audio encoded so far
    started: float = field(default_factory=time.perf_counter)  # when this run started
    _bar: object = None

    def start(self, total: int, already: int) -> None:
        self.total, self.already, self.started = total, already, time.perf_counter()
        if already:
            logger.info("resuming: %d files already done, %d to go", already, total)
        if self.show:
            from tqdm import tqdm

            self._bar = tqdm(total=total, unit="file", desc="tokenize", dynamic_ncols=True)

    def __call__(self, result: Done | Failed) -> None:
        self.files += 1
        if isinstance(result, Failed):
            self.errors += 1
        else:
            self.audio_s += result.original_samples / SAMPLE_RATE
        if self._bar is not None:
            self._bar.update(1)  # type: ignore[attr-defined]
            self._bar.set_postfix_str(self.rate_text(), refresh=False)  # type: ignore[attr-defined]

    @property
    def elapsed_s(self) -> float:
        return time.perf_counter() - self.started

    def rates(self) -> dict:
        """files/s, audio hours/s and the ETA in seconds (None until the first result)."""
        elapsed = max(self.elapsed_s, 1e-9)
        files_per_s = self.files / elapsed
        left = max(0, self.total - self.files)
        eta = left / files_per_s if files_per_s > 0 else None
        return {
            "files_per_s": files_per_s,
            "audio_hours_per_s": self.audio_s / SECONDS_PER_HOUR / elapsed,
            "eta_s": eta,
        }

    def rate_text(self) -> str:
        r = self.rates()
        eta = "?" if r["eta_s"] is None else f"{r['eta_s']:.0f} s"
        return (
            f"{r['files_per_s']:.2f} files/s, {r['audio_hours_per_s'] * SECONDS_PER_HOUR:.0f} audio s/s "
            f"({r['audio_hours_per_s']:.4f} h/s), {self.errors} errors, ETA {eta}"
        )

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()  # type: ignore[attr-defined]
            self._bar = None


def summary_lines(manifest: dict) -> list[str]:
    """The end-of-job summary the CLI prints, from the manifest (whole job, all runs)."""
    run = manifest["timings"]["runs"][-1]
    lines = [
        (
            f"{manifest['files']['encoded']} of {manifest['files']['total']} files encoded, "
            f"{manifest['files']['errors']} errors (errors.jsonl); {manifest['audio']['hours']:.4f} h of audio, "
            f"{manifest['codes']['frames']} frames in {manifest['shards']} shard(s)"
        ),
        *_skipped_line(manifest),
        f"this run: {run['files']} files, {run['audio_s'] / SECONDS_PER_HOUR:.4f} h of audio in {run['wall_s']:.1f} s "
        f"({run['files_per_s']:.2f} files/s, {run['audio_hours_per_s']:.4f} audio h/s) on {run['actors']} actor(s), "
        f"{run['gpus']} GPU(s)" + (f"; resumed, {run['skipped_shards']} shard(s) skipped" if run["resumed"] else ""),
    ]
    return lines


def _skipped_line(manifest: dict) -> list[str]:
    skipped = (manifest.get("input") or {}).get("skipped") or {}
    if not skipped:
        return []
    listed = (manifest.get("input") or {}).get("skipped_list")
    where = f" -> {listed}" if listed else " (--list-skipped FILE lists them)"
    return [
        f"skipped {sum(skipped.values())} files that are not audio: "
        + ", ".join(f"{n} {e}" for e, n in skipped.items())
        + where
    ]
