"""A tokenize job that stops moving says what it waits for.

A thread watches the time since the last result (or the start). Once it passes ``after_s`` it logs,
at warning level and again every ``after_s`` while nothing comes, what the job needs from the cluster
against what the cluster has free now: the encode actors' GPUs and CPUs, a decode task's CPUs. What
was free at that moment names the wait: "no CPU free for a decode task (2 of 2 held)" when other work
holds the CPUs, "the encode actor is still starting (loading the model)" before a first result when
the resources are held by the job itself.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from core.dataset.layout import Layout

logger = logging.getLogger(__name__)

STALL_AFTER_S = 120.0  # seconds without a result before a job says what it waits for


def waiting_for(layout: Layout, total: dict, free: dict, results: int) -> str:
    """Words for what a job laid out as ``layout`` waits for, given the cluster's ``total`` and
    ``free`` resources (``ray.cluster_resources()``, ``ray.available_resources()``)."""
    cpus, free_cpus = float(total.get("CPU", 0)), float(free.get("CPU", 0))
    gpus, free_gpus = float(total.get("GPU", 0)), float(free.get("GPU", 0))
    reasons = []
    if free_cpus < layout.decode_cpus:
        reasons.append(
            f"no CPU free for a decode task (it needs {layout.decode_cpus:g}; {cpus - free_cpus:g} of {cpus:g} "
            "held, by this job's actors and tasks or by other work on the cluster)"
        )
    actors_gpus = layout.actors * layout.gpus_per_actor
    missing = actors_gpus - (gpus - free_gpus)  # GPUs our actors do not hold yet
    if actors_gpus and missing > 0:
        if free_gpus < missing:
            reasons.append(
                f"GPUs for the encode actors: {actors_gpus} needed, {free_gpus:g} of {gpus:g} free "
                "(held by other work, or a node with GPUs left the cluster)"
            )
        else:
            reasons.append(
                f"the encode actors to be placed: each needs {layout.gpus_per_actor} GPU and "
                f"{layout.cpus_per_actor:g} CPU; {free_gpus:g} GPU and {free_cpus:g} CPU free"
            )
    if not reasons and results == 0:
        reasons.append(
            "the encode actor(s) still starting (loading the model) or the first encode call running "
            f"({gpus - free_gpus:g} of {gpus:g} GPU and {cpus - free_cpus:g} of {cpus:g} CPU in use)"
        )
    if not reasons:
        reasons.append("the encode calls running (a call of long clips on a slow device takes a while)")
    return "; ".join(reasons)


class StallWatch:
    """``with StallWatch(describe, after_s) as watch:`` ... ``watch.seen()`` after each result.
    ``describe(results)`` returns what the job waits for (called in the watch's thread)."""

    def __init__(self, describe: Callable[[int], str], after_s: float = STALL_AFTER_S):
        self.describe, self.after_s = describe, after_s
        self.results = 0
        self.last = time.monotonic()
        self.said: list[str] = []  # every message logged, in order
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="tokenize-stall", daemon=True)

    def seen(self) -> None:
        self.results += 1
        self.last = time.monotonic()

    def _watch(self) -> None:
        told = self.last
        while not self._stop.wait(min(1.0, self.after_s / 4)):
            now = time.monotonic()
            quiet = now - self.last
            if quiet >= self.after_s and now - max(told, self.last) >= self.after_s:
                try:
                    what = self.describe(self.results)
                except Exception as e:  # noqa: BLE001 - the cluster may be going away; say so and keep watching
                    what = f"the cluster's state could not be read ({type(e).__name__}: {e})"
                message = f"no result for {quiet:.0f} s ({self.results} so far): waiting for {what}."
                self.said.append(message)
                logger.warning("%s", message)
                told = now

    def __enter__(self) -> StallWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
