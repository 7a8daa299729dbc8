"""The speaker embedding models behind speaker similarity (core.analysis.speaker).

- ``ge2e``: resemblyzer's GE2E encoder (a 3-layer LSTM on 40 mel bands, 256-d embeddings), whose
  weights (``pretrained.pt``, 17 MB) ship inside the ``resemblyzer`` wheel: it runs offline. Its
  input is prepared as resemblyzer prepares it (volume raised to -30 dBFS, never lowered) and
  embedded by its own ``embed_utterance`` (1.6 s partials, averaged).
- ``wavlm``: a WavLM x-vector model through ``transformers`` (``WavLMForXVector``; the Qwen3-TTS
  table's SIM comes from a WavLM-based speaker model, e.g. ``microsoft/wavlm-base-plus-sv``),
  loaded as the codec is (core.model.weights: a local directory, or a hub id from the cache or
  the hub when it is reachable), on one explicit device, failing loudly on a partial checkpoint.

Each model is loaded once per process and device on first use and runs under its own lock.
:func:`build_random_wavlm` writes a small WavLM x-vector checkpoint with random weights (tests, the
doctor): it loads through the real path and says nothing about speakers.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import WeightsError

logger = logging.getLogger(__name__)

GE2E = "ge2e"  # the default: offline
WAVLM_EXAMPLE = "microsoft/wavlm-base-plus-sv"
GE2E_TARGET_DBFS = -30.0  # resemblyzer.hparams.audio_norm_target_dBFS
GE2E_RATE = 16_000  # Hz, resemblyzer.hparams.sampling_rate
GE2E_PARTIALS_PER_S = 1.3  # embed_utterance's defaults: a 1.6 s partial every 0.77 s ...
GE2E_MIN_COVERAGE = 0.75  # ... and a last partial kept when 3/4 of it is audio
WAVLM_HOW = (
    "To use a WavLM speaker model: on a machine with internet access run "
    f"`huggingface-cli download {WAVLM_EXAMPLE} --local-dir DIR`, copy DIR here and give DIR to "
    "core.analysis.speaker_models.encoder(DIR). Without it, speaker similarity uses GE2E (offline)."
)
RANDOM_MARKER = "codec_workbench_checkpoint.json"  # core.model.checkpoints.MARKER_FILE: random weights


class Ge2eEncoder:
    """resemblyzer's GE2E voice encoder (weights inside its wheel)."""

    id = GE2E

    def __init__(self, device: str = "cpu"):
        from importlib.metadata import version

        self.device = device
        self.label = f"GE2E (resemblyzer {version('resemblyzer')})"
        self._model: Any = None
        self._lock = threading.Lock()

    def load(self) -> Ge2eEncoder:
        with self._lock:
            if self._model is None:
                started = time.perf_counter()
                with contextlib.redirect_stdout(io.StringIO()):  # it prints where it loaded from
                    from resemblyzer import VoiceEncoder

                    self._model = VoiceEncoder(self.device, verbose=False)
                logger.info("GE2E speaker encoder loaded on %s in %.2f s", self.device, time.perf_counter() - started)
        return self

    def embed(self, speech: np.ndarray) -> np.ndarray:
        """resemblyzer's ``embed_utterance`` (its partials, its forward, the L2-normed mean) on a mel
        spectrogram made with torch: the same numbers as its librosa one (tests/core/analysis pins
        them to 1e-5) without librosa's first call, which took 10 s here."""
        import torch
        from resemblyzer import VoiceEncoder, normalize_volume

        self.load()
        wav = normalize_volume(np.asarray(speech, np.float32), GE2E_TARGET_DBFS, increase_only=True)
        wav_slices, mel_slices = VoiceEncoder.compute_partial_slices(wav.size, GE2E_PARTIALS_PER_S, GE2E_MIN_COVERAGE)
        if wav_slices[-1].stop >= wav.size:
            wav = np.pad(wav, (0, wav_slices[-1].stop - wav.size))
        mel = ge2e_mel(wav.astype(np.float32))
        batch = torch.from_numpy(np.stack([mel[s] for s in mel_slices]))
        with self._lock, torch.inference_mode():
            partials = self._model(batch.to(self.device)).cpu().double().numpy()
        raw = partials.mean(axis=0)
        return raw / max(float(np.linalg.norm(raw)), 1e-12)


def ge2e_mel(wav: np.ndarray) -> np.ndarray:
    """resemblyzer's ``wav_to_mel_spectrogram``: mel power (not log), 25 ms Hann windows every 10 ms,
    40 Slaney bands, frames as rows (frames, 40)."""
    import torch
    from torchaudio.functional import melscale_fbanks

    n_fft, hop = GE2E_RATE * 25 // 1000, GE2E_RATE * 10 // 1000  # resemblyzer.hparams.mel_window_length/_step
    spec = torch.stft(
        torch.from_numpy(np.ascontiguousarray(wav, np.float32)),
        n_fft,
        hop_length=hop,
        window=torch.hann_window(n_fft),
        center=True,
        pad_mode="constant",
        return_complex=True,
    )
    fbank = melscale_fbanks(n_fft // 2 + 1, 0.0, GE2E_RATE / 2, 40, GE2E_RATE, norm="slaney", mel_scale="slaney")
    return (fbank.T @ spec.abs().square()).T.contiguous().numpy().astype(np.float32)


class WavLmEncoder:
    """A ``WavLMForXVector`` checkpoint (a local directory or a hub id)."""

    id = "wavlm"

    def __init__(self, source: str, device: str = "cpu"):
        self.source = source
        self.device = device
        self.path: Path | None = None
        self.random_weights = False
        self.label = f"WavLM x-vector ({source})"
        self._model: Any = None
        self._features: Any = None
        self._lock = threading.Lock()

    def load(self) -> WavLmEncoder:
        with self._lock:
            if self._model is None:
                self._model, self._features, self.path = _load_wavlm(self.source, self.device)
                self.random_weights = (self.path / RANDOM_MARKER).is_file()
                if self.random_weights:
                    self.label = f"WavLM x-vector ({self.source}, random weights)"
        return self

    def embed(self, speech: np.ndarray) -> np.ndarray:
        import torch

        self.load()
        with self._lock:
            inputs = self._features(
                np.asarray(speech, np.float32), sampling_rate=self._features.sampling_rate, return_tensors="pt"
            )
            with torch.inference_mode():
                out = self._model(**{k: v.to(self.device) for k, v in inputs.items()}).embeddings
        vector = out[0].double().cpu().numpy()
        return vector / max(float(np.linalg.norm(vector)), 1e-12)


def _load_wavlm(source: str, device: str):
    from core.model.weights import lighten_transformers_import, resolve_source

    path = resolve_source(
        source, weight_files=("*.safetensors", "pytorch_model.bin"), how=WAVLM_HOW
    )  # config.json and preprocessor_config.json, as the codec's
    lighten_transformers_import()
    started = time.perf_counter()
    try:
        from transformers import AutoFeatureExtractor, WavLMForXVector

        config = json.loads((path / "config.json").read_text())
        if "WavLMForXVector" not in config.get("architectures", []):
            raise WeightsError(
                f"{path} holds {', '.join(config.get('architectures', [])) or 'no named architecture'}, not a "
                f"WavLMForXVector speaker model. {WAVLM_HOW}"
            )
        model, info = WavLMForXVector.from_pretrained(str(path), output_loading_info=True)
        features = AutoFeatureExtractor.from_pretrained(str(path))
    except WeightsError:
        raise
    except Exception as e:
        raise WeightsError(f"Loading the speaker model in {path} failed: {type(e).__name__}: {e}. {WAVLM_HOW}") from e
    missing = list(info.get("missing_keys", []))
    if missing:
        raise WeightsError(
            f"Speaker model {path} is incomplete: {len(missing)} tensors are missing (e.g. {missing[0]}), so those "
            f"layers would be random. Re-download it. {WAVLM_HOW}"
        )
    model.eval().to(device)
    logger.info("WavLM speaker model %s loaded on %s in %.2f s", path, device, time.perf_counter() - started)
    return model, features, path


_ENCODERS: dict[tuple[str, str], Any] = {}
_ENCODERS_LOCK = threading.Lock()


def encoder(model: str = GE2E, device: str = "cpu"):
    """The process's encoder for ``model`` ("ge2e", or a WavLM x-vector directory / hub id) on
    ``device``; made on first call, loaded on first use (``.load()`` loads now)."""
    with _ENCODERS_LOCK:
        key = (model, device)
        if key not in _ENCODERS:
            _ENCODERS[key] = Ge2eEncoder(device) if model == GE2E else WavLmEncoder(model, device)
        return _ENCODERS[key]


SMALL_WAVLM = {  # a WavLM x-vector model of a few hundred kB: same classes, tiny sizes
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 64,
    "conv_dim": (32, 32),
    "conv_stride": (5, 4),
    "conv_kernel": (10, 8),
    "num_conv_pos_embeddings": 16,
    "num_conv_pos_embedding_groups": 4,
    "num_buckets": 32,
    "max_bucket_distance": 80,
    "tdnn_dim": (32, 32, 64),
    "tdnn_kernel": (5, 3, 1),
    "tdnn_dilation": (1, 2, 1),
    "xvector_output_dim": 32,
}


def build_random_wavlm(directory: Path, seed: int = 0, full_size: bool = False) -> Path:
    """A small ``WavLMForXVector`` with random weights (``full_size``: the sizes of
    ``microsoft/wavlm-base-plus-sv``, ``WavLMConfig``'s defaults: 12 layers of 768, 94 M parameters,
    for timing), saved as a hub checkpoint is laid out (config.json, model.safetensors,
    preprocessor_config.json) plus the random-weights marker."""
    import torch

    from core.model.weights import lighten_transformers_import

    lighten_transformers_import()
    from transformers import Wav2Vec2FeatureExtractor, WavLMConfig, WavLMForXVector

    torch.manual_seed(seed)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    model = WavLMForXVector(WavLMConfig() if full_size else WavLMConfig(**SMALL_WAVLM)).eval()
    model.save_pretrained(directory, safe_serialization=True)
    Wav2Vec2FeatureExtractor(
        feature_size=1, sampling_rate=16_000, padding_value=0.0, do_normalize=True, return_attention_mask=True
    ).save_pretrained(directory)
    kind = "wavlm-xvector-base-size" if full_size else "wavlm-xvector-small"
    marker = {"random_weights": True, "kind": kind, "note": "Random weights: says nothing."}
    (directory / RANDOM_MARKER).write_text(json.dumps(marker, indent=2))
    return directory
