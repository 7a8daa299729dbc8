"""Reading and building a model from its checkpoint, apart from the engine that will hold it.

:func:`load_model` does every slow step of a load (importing ``qwen_tts``, reading the weights onto
the device, compiling kernels in the background, building the decoder runner) and touches no engine:
the engine calls it without its lock, so jobs and live frames of a model already loaded (the first
checkpoint, while a second one loads) go on meanwhile, and then swaps the result in under the lock
in O(1) (``core.model.engine.Engine.load``). Failures raise :class:`core.errors.CodecError` (or
whatever the loader raised); the engine turns them into its ``failed`` state.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.codec import OutputRate
from core.model import family, planner, weights
from core.nn import fast_decode, kernels
from core.nn.dtypes import TORCH_DTYPES
from core.settings import Settings

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoadedModel:
    """A model read and ready to swap into an engine."""

    tokenizer: Any  # the official ``qwen_tts.Qwen3TTSTokenizer`` wrapper
    path: Path  # the local directory the weights came from
    dims: planner.ModelDims  # read once, for the memory planner
    fast: fast_decode.FastDecoder  # the decoder jobs run (precision, compiled graphs, bf16 guard)
    output: OutputRate  # the rate its decoder writes, from its config (core.model.family)
    seconds: float  # how long the load took


def load_model(settings: Settings) -> LoadedModel:
    """Load ``settings.model`` on ``settings.device`` at ``settings.dtype`` (no lock is needed)."""
    start = time.perf_counter()
    logger.info("loading %s on %s (%s)", settings.model, settings.device, settings.dtype)
    weights.check_device(settings.device, settings.dtype)
    decode_dtype = TORCH_DTYPES[settings.decode_dtype or settings.dtype]
    snake = kernels.warm_snake_in_background(settings.device, decode_dtype) if settings.is_cuda else None
    tokenizer, path = weights.load_tokenizer(settings.model, settings.device, TORCH_DTYPES[settings.dtype])
    if snake is not None:
        snake.join()  # compiled while the model loaded
    output = family.output_rate_of(tokenizer.model)  # a decoder the workbench cannot handle is refused here
    dims = planner.ModelDims.of(tokenizer.model)
    fast = fast_decoder(tokenizer.model, settings)
    logger.info("the decoder writes %s (%d samples a frame)", output.label, output.samples_per_frame)
    return LoadedModel(tokenizer, path, dims, fast, output, time.perf_counter() - start)


def fast_decoder(model, settings: Settings) -> fast_decode.FastDecoder:
    """The decoder jobs run: in ``decode_dtype`` (guarded when bf16), compiled in the background
    when ``compile_decoder`` is set (decodes stay eager until that is done)."""
    options = fast_decode.DecodeOptions(settings.decode_dtype or settings.dtype, settings.compile_decoder)
    fast = fast_decode.FastDecoder(model.decoder, options)
    if settings.compile_decoder:
        fast.warm_in_background([(1, int(settings.decode_chunk_frames))])
    return fast
