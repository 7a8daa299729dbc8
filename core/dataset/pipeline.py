"""The tokenize pipeline on Ray Data: read -> decode + resample (CPU tasks) -> encode (actor pool) -> write.

Each encode actor owns one :class:`core.model.engine.Engine`: one actor per GPU (Ray gives each its own
device through ``CUDA_VISIBLE_DEVICES``), or a CPU actor when the engine runs on the CPU; what each
reserves and how many clips a call takes is :mod:`core.dataset.layout`. Items go to the decode tasks
in length order within windows of whole shards (:mod:`core.dataset.order`), so an actor's call holds
clips of about one length, which the engine packs longest-first into padded batches within its memory
budget. An actor loads its model and runs one call's worth of clips before its first block arrives.
The driver writes the results into Parquet shards as they complete (:mod:`core.dataset.shards`); it
alone knows when every item of a shard has a result. A job with no result for a while says what it
waits for (:mod:`core.dataset.stall`).

Without ``--address`` (or ``RAY_ADDRESS``) a small local Ray runs inside this process: no
dashboard, ``num_cpus`` and the object store sized by :class:`TokenizeOptions`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import types
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from core.codec import NUM_CODEBOOKS, SAMPLE_RATE
from core.dataset.fields import plan_fields
from core.dataset.layout import Layout, plan_layout
from core.dataset.order import decode_tasks, in_length_order
from core.dataset.rows import Inputs, Item
from core.dataset.shards import Done, Failed, ShardWriter, check_job, finished_shards, shard_of
from core.dataset.stall import STALL_AFTER_S, StallWatch, waiting_for
from core.errors import CodecError
from core.settings import Settings
from core.units import MIB

logger = logging.getLogger(__name__)

ROW_FIELDS = ("index", "key", "path", "locator", "source", "extra")  # an item as it travels through Ray

WARM_CLIP_S = 10.0  # seconds of each clip of a GPU actor's warm-up call (a CPU actor warms on one 1 s clip)
LOCAL_START_ATTEMPTS = 3  # tries to start the local Ray (its start times out under heavy CPU load)


@dataclass(frozen=True)
class TokenizeOptions:
    shard_size: int = 256  # files per Parquet shard: the unit of atomic writes and of resume
    address: str | None = None  # Ray cluster to join ("auto", "ray://host:10001", ...); None: RAY_ADDRESS or local
    num_cpus: int | None = None  # local Ray only: CPUs it may use (None: all of this machine's)
    object_store_mib: int = 1024  # local Ray only: shared-memory object store for decoded audio, MiB
    actors: int | None = None  # encode actors: None = one per GPU of the cluster (GPU engine) or 1 (CPU engine)
    batch_files: int | None = None  # clips per encode-actor call; None: core.dataset.layout's for the device
    decode_files: int = 8  # audio files per decode task
    cpus_per_actor: float | None = None  # CPUs each encode actor reserves; None: core.dataset.layout's rule
    stall_after_s: float = STALL_AFTER_S  # seconds without a result before the job says what it waits for


@dataclass(frozen=True)
class RunResult:
    resumed: bool  # the output already held part of this job
    skipped_shards: int  # shards finished by an earlier run
    written_shards: int  # shards this run wrote
    files: int  # items this run processed (codes or errors)
    audio_s: float  # seconds of audio this run encoded
    wall_s: float  # seconds this run took, Ray start included
    actors: int  # encode actors used
    gpus: int  # GPUs used by the actors, all together


OnResult = Callable[[Done | Failed], None]


def job_record(inputs: Inputs, settings: Settings, options: TokenizeOptions, source: str) -> dict:
    """What a rerun must match to resume (not the Ray layout: a resume may use other machines)."""
    return {
        "input": source,
        "input_kind": inputs.kind,
        "input_sha256": inputs.fingerprint(),
        "items": inputs.count,
        "shard_size": options.shard_size,
        "model": settings.model,
        "dtype": settings.dtype,
        "max_duration_s": settings.max_duration_s,
        "max_file_mb": settings.max_file_mb,
    }


def run(
    inputs: Inputs,
    out,
    settings: Settings,
    options: TokenizeOptions,
    job: dict,
    versions: dict,
    on_result: OnResult | None = None,
    on_start: Callable[[int, int], None] | None = None,
) -> RunResult:
    """Tokenize every item of ``inputs`` not already in a finished shard of ``out``.

    ``on_start(files_to_do, files_already_done)`` is called once before encoding starts and
    ``on_result`` after each item (progress display)."""
    import time

    start = time.perf_counter()
    resumed = check_job(out, job)
    finished = finished_shards(out)
    writer = ShardWriter(out, options.shard_size, settings.model, versions, plan_fields(i.extra for i in inputs.items))
    todo: list[Item] = [i for i in inputs.items if shard_of(i.index, options.shard_size) not in finished]
    by_shard: dict[int, set[int]] = {}
    for index in [i.index for i in todo] + [e.index for e in inputs.errors]:
        shard = shard_of(index, options.shard_size)
        if shard not in finished:
            by_shard.setdefault(shard, set()).add(index)
    for shard, indices in by_shard.items():
        writer.expect(shard, indices)
    pending = sum(len(v) for v in by_shard.values())  # items and rows without audio, not yet in a shard
    if on_start:
        on_start(pending, inputs.count - pending)
    for error in inputs.errors:  # rows that name no audio file: known before any work
        if shard_of(error.index, options.shard_size) not in finished:
            failed = Failed(error.index, error.key, error.reason, error.source)
            writer.add(failed)
            if on_result:
                on_result(failed)
    audio_s, actors, gpus = 0.0, 0, 0
    if todo:
        with ray_session(options) as ray:
            layout = plan_layout(
                ray.cluster_resources(), settings, options.actors, options.cpus_per_actor, options.batch_files
            )
            actors, gpus = layout.actors, layout.gpus_per_actor
            logger.info("encoding %d files: %s", len(todo), layout.describe())
            ordered = in_length_order(todo, options.shard_size, layout.batch_files)

            def describe(results: int) -> str:
                return waiting_for(layout, ray.cluster_resources(), ray.available_resources(), results)

            with StallWatch(describe, options.stall_after_s) as watch:
                for result in _results(ordered, settings, layout, options.decode_files):
                    watch.seen()
                    writer.add(result)
                    if isinstance(result, Done):
                        audio_s += result.original_samples / SAMPLE_RATE
                    if on_result:
                        on_result(result)
    if not writer.complete:
        raise CodecError(f"the pipeline ended with {len(writer.pending)} shard(s) incomplete; rerun to resume.")
    return RunResult(
        resumed,
        len(finished),
        len(writer.written),
        pending,
        audio_s,
        time.perf_counter() - start,
        actors,
        actors * gpus,
    )


@contextlib.contextmanager
def ray_session(options: TokenizeOptions) -> Iterator[types.ModuleType]:
    """Join the cluster at ``options.address`` / RAY_ADDRESS, or start a small local Ray for this
    process; a Ray this process already runs is reused and left running."""
    import ray

    if ray.is_initialized():
        yield ray
        return
    address = options.address or os.environ.get("RAY_ADDRESS") or None
    if address:
        ray.init(address=address, logging_level=logging.WARNING)
    else:
        for attempt in range(1, LOCAL_START_ATTEMPTS + 1):
            try:
                ray.init(
                    address="local",
                    num_cpus=options.num_cpus,
                    include_dashboard=False,
                    object_store_memory=options.object_store_mib * MIB,
                    logging_level=logging.WARNING,
                )
                break
            except Exception as e:
                ray.shutdown()
                if attempt == LOCAL_START_ATTEMPTS:
                    raise CodecError(
                        f"the local Ray did not start ({e}); try again on a less busy machine, "
                        "or start one with `ray start --head` and pass --address auto."
                    ) from e
                logger.warning("the local Ray did not start (%s); trying again", e)
    try:
        yield ray
    finally:
        ray.shutdown()


def _results(todo: list[Item], settings: Settings, layout: Layout, decode_files: int) -> Iterator[Done | Failed]:
    import ray.data

    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False  # the CLI shows one bar for the whole job
    context.print_on_execution_start = False
    tasks = [
        {"items": json.dumps([[i.index, i.key, i.path, i.locator, i.source, i.extra] for i in task])}
        for task in decode_tasks(todo, decode_files)
    ]
    ds: ray.data.Dataset = ray.data.from_items(tasks, override_num_blocks=len(tasks))
    with warnings.catch_warnings():  # deprecated in 2.60 with no replacement that keeps the stages apart yet
        warnings.simplefilter("ignore", DeprecationWarning)
        ds = ds.map_batches(
            decode_task,  # type: ignore[arg-type]  # extra arguments come through fn_kwargs
            batch_size=1,
            batch_format="numpy",
            ray_remote_args_fn=functools.partial(_decode_task_args, layout.decode_cpus),
            fn_kwargs={"limits": settings.audio_limits()},
        )
    ds = ds.map_batches(
        EncodeActor,
        batch_size=layout.batch_files,
        batch_format="numpy",
        compute=ray.data.ActorPoolStrategy(size=layout.actors, max_concurrent_calls_per_actor=layout.calls_at_once),
        num_gpus=layout.gpus_per_actor,
        num_cpus=layout.cpus_per_actor,
        fn_constructor_kwargs={
            "settings": layout.settings,
            "threads": layout.torch_threads,
            "warm_files": layout.batch_files if layout.gpus_per_actor else 1,
        },
    )
    for batch in ds.iter_batches(batch_size=None, batch_format="numpy"):
        for row in range(len(batch["index"])):
            index, key, source = int(batch["index"][row]), str(batch["key"][row]), str(batch["source"][row])
            if batch["error"][row]:
                yield Failed(index, key, str(batch["error"][row]), source)
                continue
            codes = np.frombuffer(batch["codes"][row], dtype=np.int16).reshape(-1, NUM_CODEBOOKS)
            yield Done(
                index,
                key,
                source,
                str(batch["sha256"][row]),
                codes,
                int(batch["original_samples"][row]),
                str(batch["extra"][row]),
            )


def _decode_task_args(cpus: float) -> dict:
    """What a decode task reserves (``core.dataset.layout``). Given as a function, which also keeps them
    separate tasks: Ray would otherwise fuse them into the encode actors whenever both ask for the
    same resources (CPU engines), and decoding would then wait on the model."""
    return {"num_cpus": cpus}


def decode_task(batch: dict, limits) -> dict:
    """Ray task: read, downmix and resample each item's audio to 24 kHz float32 under the engine's
    input ``limits`` (Settings.audio_limits); an item that fails gets its reason instead of samples."""
    from core.dataset.decode import decode_items

    rows = [row for task in batch["items"] for row in json.loads(str(task))]
    decoded = list(decode_items([r[2] for r in rows], [r[3] for r in rows], limits))
    samples = [a.samples.astype(np.float32).tobytes() if a is not None else b"" for a, _, _ in decoded]
    order = np.argsort([-len(s) for s in samples], kind="stable")  # longest first: neighbours share a length
    out = {name: np.array([r[k] for r in rows], dtype=object)[order] for k, name in enumerate(ROW_FIELDS)}
    out["index"] = np.array([r[0] for r in rows], dtype=np.int64)[order]
    out["samples"] = np.array(samples, dtype=object)[order]
    out["sha256"] = np.array([d[1] for d in decoded], dtype=object)[order]
    out["error"] = np.array([d[2] for d in decoded], dtype=object)[order]
    return out


def _reason(e: Exception) -> str:
    return str(e) if isinstance(e, (CodecError, OSError)) else f"{type(e).__name__}: {e}"


class EncodeActor:
    """Ray actor: one engine, loaded once and warmed up on a call's worth of clips (CUDA's kernels
    loaded, cuDNN's plans chosen) while the first decode tasks run; encodes batches of decoded clips.
    ``threads``: torch's CPU threads (CPU engines; capped at this machine's CPUs)."""

    def __init__(self, settings: Settings, threads: int | None = None, warm_files: int = 1):
        import time

        from core.model.engine import Engine

        start = time.perf_counter()
        self.threads = min(threads, os.cpu_count() or 1) if threads else None
        self._set_threads()
        self.engine = Engine(settings)
        if not self.engine.load():
            raise CodecError(f"the encode actor could not load the model: {self.engine.error}")
        seconds = WARM_CLIP_S if settings.is_cuda else 1.0
        warm = np.random.default_rng(0).standard_normal(int(seconds * SAMPLE_RATE)).astype(np.float32) * 0.1
        self.engine.encode_batch([types.SimpleNamespace(samples=warm)] * max(1, warm_files))
        logger.info(
            "encode actor ready in %.1f s (model loaded, one call of %d clips run)",
            time.perf_counter() - start,
            warm_files,
        )

    def _set_threads(self) -> None:
        import torch

        if self.threads and torch.get_num_threads() != self.threads:
            torch.set_num_threads(self.threads)

    def __call__(self, batch: dict) -> dict:
        self._set_threads()
        n = len(batch["index"])
        codes: list[bytes] = [b""] * n
        original = np.zeros(n, dtype=np.int64)
        errors = [str(e) for e in batch["error"]]
        todo = [i for i in range(n) if not errors[i]]
        clips = [np.frombuffer(batch["samples"][i], dtype=np.float32).copy() for i in todo]  # torch wants writable
        try:
            results: list = self.engine.encode_batch([types.SimpleNamespace(samples=c) for c in clips])
        except Exception as e:  # noqa: BLE001 - one bad clip or an out-of-memory batch: retry one by one to isolate it
            logger.warning("batch of %d failed (%s); encoding one by one", len(clips), _reason(e))
            results = []
            for i, clip in zip(todo, clips, strict=True):
                try:
                    results.append(self.engine.encode_array(clip))
                except Exception as e1:  # noqa: BLE001 - its reason goes to errors.jsonl
                    errors[i] = _reason(e1)
                    results.append(None)
        for i, result in zip(todo, results, strict=True):
            if result is not None:
                codes[i] = result.codes.astype(np.int16).tobytes()
                original[i] = result.original_samples
        out = {k: v for k, v in batch.items() if k != "samples"}  # audio stays here; only codes travel back
        out["codes"] = np.array(codes, dtype=object)
        out["original_samples"] = original
        out["error"] = np.array(errors)
        return out
