"""A second checkpoint beside the first: same device, same readiness checks, same lock.

Decision: the second model is a second :class:`Engine` that shares the first one's lock, and the
first engine owns it (``engine.compare``); the Engine does not hold two models. Why:

- every job and check the first model has (encode, decode, ladder depths, the round trip, chunk
  plans, out-of-memory retries, the three readiness steps) runs unchanged on the second: one code
  path, nothing copied into an Engine that is already at its size limit;
- one lock still serialises all model work on the device (moshi style): a job on either model waits
  for a job on the other, and :func:`roundtrip_both` holds it across both;
- whatever holds the first engine (the web app, the CLI) reaches the second through it.

Loading: the second checkpoint is read without the lock (``core.model.engine.Engine.load``): jobs
and live frames on the first model go on while it loads, and it is swapped in under the lock in
O(1); then its readiness check runs as a job like any other. One load beside the first model at a
time: a second ``load_second``, an unload or a reload of the first waits for the one in flight.

Memory: before any weight is read, the second checkpoint's weights at its dtype (from the
safetensors headers) plus the working memory of a ``REFERENCE_S`` round trip must fit in the
allowed share (``--max-batch-memory-fraction``) of what is free now; the first model's weights are
resident, so the measurement counts them. Otherwise it is refused with a message saying what was
needed and what is free. Once loaded, every job on either model is planned against the memory that
is left, as before; while it loads, the first model's jobs are planned without its weights' bytes
(``Engine.loading_bytes``), so a job started meanwhile cannot take what the load is about to fill. The working memory is the first model's estimate (a second checkpoint is the same
architecture: fine-tuned, quantised, or the same weights at another precision).
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass

from core.analysis import token_usage
from core.codec import NUM_CODEBOOKS
from core.errors import CodecError, EngineNotReady
from core.model import memory, planner
from core.model.engine import Engine, EngineState
from core.model.results import RoundTripResult
from core.model.weights import checkpoint_weight_bytes, resolve_source
from core.nn.dtypes import TORCH_DTYPES
from core.units import MIB

logger = logging.getLogger(__name__)

REFERENCE_S = 30.0  # s: the round trip whose working memory must fit beside both models' weights


def second_settings(primary: Engine, model: str, dtype: str | None = None, decode_dtype: str | None = None):
    """The first engine's settings with the second checkpoint's model and precision."""
    s = primary.settings
    dtype = dtype or s.compare_dtype or s.dtype
    decode = decode_dtype or s.compare_decode_dtype or (None if dtype != s.dtype else s.decode_dtype)
    return dataclasses.replace(s, model=model, dtype=dtype, decode_dtype=decode, compare_model="")


def _fit(primary: Engine, settings) -> tuple[planner.MemoryEstimate, float]:
    """(the estimate, the bytes the second checkpoint's weights will take)."""
    if not primary.ready:
        raise EngineNotReady("Load the first model before a second checkpoint: " + primary.not_ready_message())
    weights = float(checkpoint_weight_bytes(resolve_source(settings.model), TORCH_DTYPES[settings.dtype]))
    first = primary.estimate("roundtrip", REFERENCE_S)
    dims = primary._dims
    work = max(0.0, first.peak_mib * MIB - (float(dims.weight_bytes) if dims is not None else 0.0))
    free = memory.free_bytes(primary.device)
    estimate = planner.second_model_estimate(
        weights, work, free, settings.max_batch_memory_fraction, settings.device, REFERENCE_S
    )
    return estimate, weights


def load_second(primary: Engine, model: str, dtype: str | None = None, decode_dtype: str | None = None) -> Engine:
    """Load ``model`` as ``primary.compare`` after the memory check, then run the readiness check on
    it. Returns the second engine: ready, or failed with the reason (a refusal included; nothing
    was loaded then). A second checkpoint loaded before is unloaded first. The first model keeps
    serving jobs and live frames while the weights are read (``primary.compare`` says "loading")."""
    with primary._loading:
        unload_second(primary)
        settings = second_settings(primary, model, dtype, decode_dtype)
        second = Engine(settings, lock=primary._lock)
        try:
            estimate, weights = _fit(primary, settings)
        except CodecError as e:
            second._fail(str(e))
            primary.compare = second
            return second
        if not estimate.fits:
            logger.warning("second checkpoint refused: %s", estimate.message)
            second._fail(estimate.message)
            primary.compare = second
            return second
        logger.info("second checkpoint %s: %s", model, estimate.message)
        second.state = EngineState.LOADING
        primary.compare, primary.loading_bytes = second, weights
        try:
            second.warm_up()  # load (off the lock) + the same three readiness steps as the first model
        finally:
            primary.loading_bytes = 0.0
        return second


def unload_second(primary: Engine) -> None:
    """Drop the second checkpoint, if any (its memory goes back to the device); waits for a load in flight."""
    with primary._loading:  # locks in the order a load takes them: the loading lock, then the engine lock
        other, primary.compare = primary.compare, None
        if other is not None:
            other.unload()


def ready_second(primary: Engine) -> Engine | None:
    """The second engine when one is loaded and ready, else None."""
    second = primary.compare
    return second if second is not None and second.state == EngineState.READY else None


LOADING, FAILED, NONE = "loading", "failed", "none"  # why no second checkpoint is ready (not_ready)


def not_ready(primary: Engine) -> tuple[str, str]:
    """Why no second checkpoint can take a job now: (LOADING, ""), (FAILED, its error: a refusal
    included) or (NONE, "") when none is loaded."""
    second = primary.compare
    if second is not None and second.state == EngineState.LOADING:
        return LOADING, ""
    if second is not None and second.state == EngineState.FAILED:
        return FAILED, (second.error or "no reason was given").strip().rstrip(".")
    return NONE, ""


def not_ready_message(primary: Engine) -> str:
    """:func:`not_ready` as a sentence that says what to do: wait for the load, load it again (why it
    failed), or load one."""
    state, error = not_ready(primary)
    if state == LOADING:
        return "The second checkpoint is still loading: try again in a moment."
    if state == FAILED:
        return (
            f"The second checkpoint failed to load: {error}. Load it again (or another one) on the System tab, "
            "or start with --compare-model DIR."
        )
    return "No second checkpoint is loaded: start with --compare-model DIR (or pick one on the System tab)."


@dataclass(frozen=True)
class BothResult:
    first: RoundTripResult
    second: RoundTripResult

    def agreement(self) -> list[float]:
        """Share of codes equal per codebook, first model against second (16 values in 0..1)."""
        return token_usage.agreement(self.first.encoded.codes, self.second.encoded.codes)


def roundtrip_both(primary: Engine, audio, progress=None, codebooks: int = NUM_CODEBOOKS) -> BothResult:
    """The clip through both models under the one lock (the second's share of progress after the first's)."""
    second = ready_second(primary)
    if second is None:
        raise EngineNotReady(not_ready_message(primary))
    report = progress or (lambda f: None)
    with primary._lock:
        first = primary.roundtrip(audio, lambda f: report(0.5 * f), codebooks)
        other = second.roundtrip(audio, lambda f: report(0.5 + 0.5 * f), codebooks)
    return BothResult(first, other)


def describe(primary: Engine) -> dict:
    """The second checkpoint's state for the status line, /health and the System tab."""
    second = primary.compare
    if second is None:
        return {"state": "none"}
    info = second.info()
    return {k: info[k] for k in ("state", "error", "model", "model_path", "dtype", "decode_dtype", "random_weights")}
