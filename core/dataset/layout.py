"""Where a tokenize job's work runs on the Ray cluster: how many encode actors, what each reserves,
what each decode task reserves, and the engine settings each actor gets.

- A GPU engine: one actor per GPU (or ``--actors``), one CPU each for its host work; clips per call
  and padded audio per call raised to :data:`GPU_BATCH_FILES` and :data:`GPU_BATCH_AUDIO_S`, so the
  GPU gets few large calls (the front-end's time windows keep the memory bounded: ``core.nn.batching``);
  an actor takes two calls at once, so one call's host work (taking clips in, handing codes back)
  overlaps the other's model work, which the engine's lock runs one call at a time.
- A CPU engine: the model is nearly all of the work (a decode task costs ≈1/600 of its audio's time
  on one core, the full-size encode ≈1/20 on two), so one actor runs torch on every CPU of the
  machine and decode tasks take their turns beside it; clips per call :data:`CPU_BATCH_FILES`, one
  call at a time on one thread (torch's OpenMP pools are per thread: ``core.model.torch_threads``).

The rule that keeps a job from waiting for ever: the cluster's CPUs must hold every actor and one
decode task at once. When they cannot at the requested sizes, the reservations are shrunk to fit
(Ray's CPUs are shares; a smaller share only lets more run at once), and the job is refused in
words when even a :data:`MIN_CPU_SHARE` share each does not fit.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, fields, replace

from core.errors import CodecError
from core.settings import Settings

logger = logging.getLogger(__name__)

DECODE_TASK_CPUS = 1.0  # CPUs a decode task reserves when the cluster has room for it
MIN_CPU_SHARE = 0.1  # the smallest CPU share an actor or a decode task is sized down to
GPU_BATCH_FILES = 128  # clips per encode call on a GPU: few large calls keep it busy
GPU_BATCH_AUDIO_S = 480.0  # padded audio seconds per batched encode call on a GPU (≈16 GiB of fp32 activations)
GPU_CALLS_AT_ONCE = (
    2  # a second call's host work overlaps the first's model work (the engine's lock orders the model work)
)
CPU_BATCH_FILES = 16  # clips per encode call on a CPU: results come sooner; batching gains little there


@dataclass(frozen=True)
class Layout:
    actors: int  # encode actors
    gpus_per_actor: int  # 1 on a GPU engine, 0 on a CPU engine
    cpus_per_actor: float  # CPUs each actor reserves in Ray
    decode_cpus: float  # CPUs each decode task reserves in Ray
    torch_threads: int | None  # torch's CPU threads in each actor (CPU engines; None: leave as Ray sets them)
    batch_files: int  # clips per encode call
    settings: Settings  # each actor's engine settings
    calls_at_once: int = 1  # calls an actor takes at once (GPU: one in the model, one coming in or going out)

    def describe(self) -> str:
        what = f"{self.actors} encode actor(s) with {self.gpus_per_actor} GPU and {self.cpus_per_actor:g} CPU each"
        return f"{what}, decode tasks with {self.decode_cpus:g} CPU each, {self.batch_files} clips per encode call"


def plan_layout(
    resources: dict,
    settings: Settings,
    actors: int | None,
    cpus_per_actor: float | None,
    batch_files: int | None,
) -> Layout:
    """The layout for a cluster with ``resources`` (``ray.cluster_resources()``). Raises CodecError,
    in words, when the cluster cannot run the job at all."""
    cpus = float(resources.get("CPU", 0))
    if settings.is_cuda:
        gpus = int(resources.get("GPU", 0))
        if gpus < 1:
            raise CodecError(
                "the engine is set to a GPU but the Ray cluster has none; use --device cpu "
                "or join a cluster with GPUs (--address)."
            )
        count = min(actors or gpus, gpus)
        # Ray makes each actor's GPU its cuda:0 (CUDA_VISIBLE_DEVICES)
        engine = replace(settings, device="cuda:0", batch_audio_s=gpu_batch_audio_s(settings))
        each = 1.0 if cpus_per_actor is None else cpus_per_actor
        actor_cpus, decode_cpus = fit_cpus(cpus, count, each)
        return Layout(
            count, 1, actor_cpus, decode_cpus, None, batch_files or GPU_BATCH_FILES, engine, GPU_CALLS_AT_ONCE
        )
    count = max(1, actors or 1)
    each = max(1.0, (cpus - DECODE_TASK_CPUS) / count) if cpus_per_actor is None else cpus_per_actor
    actor_cpus, decode_cpus = fit_cpus(cpus, count, each)
    threads = max(1, round(cpus / count)) if cpus_per_actor is None else None  # the actor caps it at its machine's
    return Layout(count, 0, actor_cpus, decode_cpus, threads, batch_files or CPU_BATCH_FILES, settings)


def gpu_batch_audio_s(settings: Settings) -> float:
    """Padded audio per batched encode call on a GPU actor: :data:`GPU_BATCH_AUDIO_S` unless the
    user chose a value (``--batch-audio-s``: theirs bounds the memory)."""
    default = next(f.default for f in fields(Settings) if f.name == "batch_audio_s")
    return GPU_BATCH_AUDIO_S if settings.batch_audio_s == default else settings.batch_audio_s


def fit_cpus(cpus: float, actors: int, per_actor: float) -> tuple[float, float]:
    """(CPUs per actor, CPUs per decode task) so that ``actors`` actors and one decode task fit in
    ``cpus`` at once: as asked when they fit, else shares shrunk to fit; CodecError when even
    :data:`MIN_CPU_SHARE` each does not fit."""
    if per_actor < 0:
        raise CodecError("--cpus-per-actor must not be negative.")
    if actors * per_actor + DECODE_TASK_CPUS <= cpus:
        return per_actor, DECODE_TASK_CPUS
    share = math.floor(cpus / (actors + 1) * 100) / 100  # Ray counts CPUs in 1/10000ths; keep them round
    if share < MIN_CPU_SHARE:
        raise CodecError(
            f"the Ray cluster has {cpus:g} CPU(s): too few to hold {actors} encode actor(s) and one decode "
            f"task at once (each needs at least {MIN_CPU_SHARE:g} CPU), so the job would wait for ever. "
            "Give more CPUs (--num-cpus, or a cluster with more) or fewer actors (--actors)."
        )
    actor_cpus = min(per_actor, share) if per_actor > 0 else 0.0
    decode_cpus = min(DECODE_TASK_CPUS, math.floor((cpus - actors * actor_cpus) * 100) / 100)
    logger.warning(
        "%g CPU(s) cannot hold %d encode actor(s) of %g CPU and a decode task of %g CPU at once: "
        "each actor reserves %g CPU and each decode task %g instead (they share the CPUs). "
        "Give more CPUs (--num-cpus) for speed.",
        cpus,
        actors,
        per_actor,
        DECODE_TASK_CPUS,
        actor_cpus,
        decode_cpus,
    )
    return actor_cpus, decode_cpus
