"""The speech recognisers behind dWER (core.analysis.dwer).

- ``pocketsphinx``: CMU PocketSphinx 5 with the US-English acoustic model, language model and
  dictionary inside its wheel: offline, English only. Measured on the speech made here
  (docs/judging.md, bench/results/voice_bench.md) before it was relied on.
- ``whisper``: a Whisper checkpoint through ``transformers`` (``WhisperForConditionalGeneration``
  with its processor), loaded as the codec is (core.model.weights: a local directory, or a hub id
  from the cache or the hub when it is reachable); it transcribes the languages its checkpoint
  names (its ``lang_to_id``), told the clip's language when it is stated.

:func:`build_random_whisper` writes a small Whisper checkpoint with random weights and a byte-level
tokenizer made here (tests, the doctor): it loads through the real path and transcribes noise.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import WeightsError

logger = logging.getLogger(__name__)

POCKETSPHINX = "pocketsphinx"
WHISPER_EXAMPLE = "openai/whisper-large-v3"
WHISPER_HOW = (
    "To use Whisper for dWER: on a machine with internet access run "
    f"`huggingface-cli download {WHISPER_EXAMPLE} --local-dir DIR`, copy DIR here and give DIR to "
    "core.analysis.asr.recogniser(DIR)."
)
RANDOM_MARKER = "codec_workbench_checkpoint.json"  # core.model.checkpoints.MARKER_FILE: random weights
ASR_RATE = 16_000  # Hz, what both take


class PocketsphinxAsr:
    """PocketSphinx with the US-English model inside its wheel."""

    id = POCKETSPHINX
    languages: frozenset[str] | None = frozenset({"en"})

    def __init__(self):
        from importlib.metadata import version

        self.label = f"pocketsphinx {version('pocketsphinx')} (US English)"
        self._decoder: Any = None
        self._lock = threading.Lock()

    def load(self) -> PocketsphinxAsr:
        with self._lock:
            if self._decoder is None:
                from pocketsphinx import Decoder

                started = time.perf_counter()
                self._decoder = Decoder(samprate=ASR_RATE, loglevel="FATAL")
                logger.info("pocketsphinx loaded in %.2f s", time.perf_counter() - started)
        return self

    def transcribe(self, speech: np.ndarray, language: str | None = "en") -> str:
        self.load()
        pcm = (np.clip(np.asarray(speech, np.float32), -1.0, 1.0) * 32767).round().astype("<i2").tobytes()
        with self._lock:
            self._decoder.start_utt()
            self._decoder.process_raw(pcm, full_utt=True)
            self._decoder.end_utt()
            hypothesis = self._decoder.hyp()
        return hypothesis.hypstr if hypothesis is not None else ""


class WhisperAsr:
    """A Whisper checkpoint (a local directory or a hub id)."""

    id = "whisper"
    detects_language = True  # told nothing, it names the language itself

    def __init__(self, source: str, device: str = "cpu", max_new_tokens: int = 96):
        self.source = source
        self.device = device
        self.max_new_tokens = max_new_tokens  # 8 s of speech is about 30 words
        self.label = f"Whisper ({source})"
        self.languages: frozenset[str] | None = None
        self.random_weights = False
        self._model: Any = None
        self._processor: Any = None
        self._lock = threading.Lock()

    def load(self) -> WhisperAsr:
        with self._lock:
            if self._model is None:
                self._model, self._processor, path = _load_whisper(self.source, self.device)
                lang_to_id = getattr(self._model.generation_config, "lang_to_id", None) or {}
                self.languages = frozenset(k.strip("<|>") for k in lang_to_id) or frozenset({"en"})
                self.random_weights = (path / RANDOM_MARKER).is_file()
                if self.random_weights:
                    self.label = f"Whisper ({self.source}, random weights)"
        return self

    def transcribe(self, speech: np.ndarray, language: str | None = None) -> str:
        import torch

        self.load()
        with self._lock:
            features = self._processor(np.asarray(speech, np.float32), sampling_rate=ASR_RATE, return_tensors="pt")
            kwargs: dict[str, Any] = {"max_new_tokens": self.max_new_tokens, "task": "transcribe"}
            if language and len(self.languages or ()) > 1:  # else it detects the language
                kwargs["language"] = language.split("-")[0].lower()
            with torch.inference_mode():
                ids = self._model.generate(features.input_features.to(self.device), **kwargs)
            return str(self._processor.batch_decode(ids, skip_special_tokens=True)[0]).strip()


def _load_whisper(source: str, device: str):
    from core.model.weights import lighten_transformers_import, resolve_source

    path = resolve_source(source, weight_files=("*.safetensors", "pytorch_model.bin"), how=WHISPER_HOW)
    lighten_transformers_import()
    started = time.perf_counter()
    try:
        from transformers import WhisperForConditionalGeneration, WhisperProcessor

        config = json.loads((path / "config.json").read_text())
        if config.get("model_type") != "whisper":
            raise WeightsError(f"{path} holds a {config.get('model_type')!r} model, not Whisper. {WHISPER_HOW}")
        model, info = WhisperForConditionalGeneration.from_pretrained(str(path), output_loading_info=True)
        processor = WhisperProcessor.from_pretrained(str(path))
    except WeightsError:
        raise
    except Exception as e:
        raise WeightsError(f"Loading the ASR model in {path} failed: {type(e).__name__}: {e}. {WHISPER_HOW}") from e
    missing = [k for k in info.get("missing_keys", []) if k != "proj_out.weight"]  # tied to the embeddings
    if missing:
        raise WeightsError(f"ASR model {path} is incomplete: {len(missing)} tensors are missing (e.g. {missing[0]}).")
    model.eval().to(device)
    logger.info("Whisper %s loaded on %s in %.2f s", path, device, time.perf_counter() - started)
    return model, processor, path


_ASRS: dict[tuple[str, str], Any] = {}
_ASRS_LOCK = threading.Lock()


def recogniser(model: str = POCKETSPHINX, device: str = "cpu"):
    """The process's ASR for ``model`` ("pocketsphinx", or a Whisper directory / hub id); made on
    first call, loaded on first use (``.load()`` loads now)."""
    with _ASRS_LOCK:
        key = (model, device)
        if key not in _ASRS:
            _ASRS[key] = PocketsphinxAsr() if model == POCKETSPHINX else WhisperAsr(model, device)
        return _ASRS[key]


SPECIAL: tuple[str, ...] = ("<|endoftext|>", "<|startoftranscript|>", "<|en|>", "<|zh|>", "<|transcribe|>")
SPECIAL += ("<|translate|>", "<|startoflm|>", "<|startofprev|>", "<|nospeech|>", "<|notimestamps|>")
WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel")  # whole-word tokens


def build_random_whisper(directory: Path, seed: int = 0) -> Path:
    """A small ``WhisperForConditionalGeneration`` with random weights, its processor (feature
    extractor and a byte-level BPE tokenizer of a few whole words (the space before each),
    without merges, made here: whatever the random model says decodes to words) and a generation config
    for English and Chinese, saved as a hub checkpoint is laid out, plus the random-weights marker."""
    import torch

    from core.model.weights import lighten_transformers_import

    lighten_transformers_import()
    from transformers import (
        GenerationConfig,
        WhisperConfig,
        WhisperFeatureExtractor,
        WhisperForConditionalGeneration,
        WhisperProcessor,
        WhisperTokenizer,
    )

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    pieces = [f"\u0120{word}" for word in WORDS]  # \u0120: GPT-2's space before each word
    vocab = {piece: i for i, piece in enumerate(pieces)}
    vocab |= {token: len(vocab) + i for i, token in enumerate(SPECIAL)}
    (directory / "vocab.json").write_text(json.dumps(vocab))
    (directory / "merges.txt").write_text("#version: 0.2\n")
    tokenizer = WhisperTokenizer(
        str(directory / "vocab.json"),
        str(directory / "merges.txt"),
        unk_token="<|endoftext|>",
        bos_token="<|endoftext|>",
    )
    tokenizer.add_special_tokens({"additional_special_tokens": list(SPECIAL[1:])})
    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in SPECIAL}
    processor = WhisperProcessor(WhisperFeatureExtractor(feature_size=80), tokenizer)
    config = WhisperConfig(
        vocab_size=len(tokenizer),
        num_mel_bins=80,
        d_model=32,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_source_positions=1500,
        max_target_positions=128,
        decoder_start_token_id=ids["<|startoftranscript|>"],
        eos_token_id=ids["<|endoftext|>"],
        pad_token_id=ids["<|endoftext|>"],
        bos_token_id=ids["<|endoftext|>"],
        begin_suppress_tokens=None,
        suppress_tokens=None,
    )
    torch.manual_seed(seed)
    model = WhisperForConditionalGeneration(config).eval()
    model.generation_config = GenerationConfig(
        decoder_start_token_id=ids["<|startoftranscript|>"],
        eos_token_id=ids["<|endoftext|>"],
        pad_token_id=ids["<|endoftext|>"],
        bos_token_id=ids["<|endoftext|>"],
        max_length=128,
        is_multilingual=True,
        lang_to_id={"<|en|>": ids["<|en|>"], "<|zh|>": ids["<|zh|>"]},
        task_to_id={"transcribe": ids["<|transcribe|>"], "translate": ids["<|translate|>"]},
        no_timestamps_token_id=ids["<|notimestamps|>"],
        suppress_tokens=[ids[token] for token in SPECIAL[1:]],  # as published checkpoints keep them out of text
    )
    model.save_pretrained(directory, safe_serialization=True)
    processor.save_pretrained(directory)
    marker = {"random_weights": True, "kind": "whisper-small-random", "note": "Random weights: says nothing."}
    (directory / RANDOM_MARKER).write_text(json.dumps(marker, indent=2))
    return directory
