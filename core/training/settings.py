"""What a fine-tuning run is asked to do: :class:`FinetuneSettings`, checked when it is made.

Every refusal is a :class:`core.errors.TrainingError` whose sentence says what to change. The
settings are recorded in the run folder (``settings.json``); a resumed run must be asked for the
same run (only ``steps`` and the logging intervals may change).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

from core.codec import FRAME_RATE, SAMPLE_RATE
from core.errors import TrainingError

PRECISIONS = ("auto", "fp32", "bf16", "fp16")  # auto: bf16 where the device has it, else fp16 on a GPU, fp32 on a CPU
CHECKPOINTING = ("auto", "none", "blocks")  # auto: per decoder block on a GPU, none on a CPU
MAX_VAL_CLIPS = 64  # held-out clips decoded at each evaluation (bounded: each eval decodes them all)
RESUMABLE_CHANGES = ("steps", "eval_every", "save_every", "log_every", "resume")  # may differ on --resume


@dataclass(frozen=True)
class FinetuneSettings:
    data: Path | str  # anything `python -m core tokenize` reads, or its output folder (codes already there)
    out: Path  # the run folder (new, empty, or a run to resume)
    model: str = "Qwen/Qwen3-TTS-Tokenizer-12Hz"  # the base checkpoint: folder or hub id
    steps: int = 1000  # optimizer steps
    device: str = "cpu"  # cpu or cuda:N (under torchrun, each process takes cuda:LOCAL_RANK)
    precision: str = "auto"  # fp32 | bf16 (autocast) | fp16 (autocast + GradScaler) | auto
    batch_size: int = 4  # segments per step (per process under DDP)
    accumulate: int = 1  # micro-batches per step (gradient accumulation: memory of batch_size / accumulate)
    segment_s: float = 1.6  # seconds per training segment, rounded to whole frames (80 ms)
    window_s: float = 0.0  # > 0: the decoder's convolutions run in windows of this length with left context
    learning_rate: float = 1e-4  # AdamW, decoder
    disc_learning_rate: float = 2e-4  # AdamW, discriminators
    weight_decay: float = 0.0
    grad_clip: float = 1000.0  # max gradient norm (decoder and discriminators)
    val_clips: int = 0  # held-out clips; 0: val_share of the clips (at least 1)
    val_share: float = 0.1
    checkpointing: str = "auto"  # activation checkpointing: none | blocks (each decoder block) | auto
    frozen_off_device: bool = True  # codebooks (and the never-used encoder) stay on the CPU
    freeze_transformer: bool = False  # the decoder's transformer is not trained
    freeze_blocks: int = 0  # the first N convolution blocks of the decoder are not trained
    adversarial: bool = True  # multi-period + multi-resolution STFT discriminators (False: --no-gan, mel only)
    disc_channels: int = 32  # width of the discriminators' first layers
    gan_warmup_steps: int = -1  # mel-only steps before the discriminators join (-1: a fifth of the steps)
    mel_weight: float = 15.0
    rms_weight: float = 1.0  # loudness: L1 of per-segment RMS (dB)
    adv_weight: float = 1.0
    feature_weight: float = 2.0
    eval_every: int = 100  # steps between held-out evaluations (and samples); 0: only at start and end
    save_every: int = 100  # steps between resumable states; 0: only at the end
    log_every: int = 1  # steps between progress lines
    seed: int = 0
    resume: bool = False  # continue the run in ``out`` from its last state
    audio_column: str = "audio"  # manifest field / table column with the audio
    data_root: Path | None = None  # folder every path a manifest names must lie in
    max_clip_s: float = 60.0  # longer clips are cut to this (the encoder's cost grows with length)
    upsample_to: int = 0  # 48000: add a x2 upsample block (needs core.model.family)
    extra: dict = field(default_factory=dict)  # recorded as given (the page's notes); never read

    def __post_init__(self):
        if self.steps < 1:
            raise TrainingError(f"--steps must be at least 1 (got {self.steps}).")
        if self.precision not in PRECISIONS:
            raise TrainingError(f"Unknown precision {self.precision!r}: use one of {', '.join(PRECISIONS)}.")
        if self.checkpointing not in CHECKPOINTING:
            raise TrainingError(f"Unknown checkpointing {self.checkpointing!r}: use one of {', '.join(CHECKPOINTING)}.")
        if self.batch_size < 1:
            raise TrainingError(f"--batch-size must be at least 1 (got {self.batch_size}).")
        if self.accumulate < 1 or self.batch_size % self.accumulate:
            raise TrainingError(f"--accumulate must divide --batch-size {self.batch_size} (got {self.accumulate}).")
        if not (math.isfinite(self.segment_s) and self.segment_s >= 1 / FRAME_RATE):
            raise TrainingError(f"--segment-s must be at least one frame, 0.08 s (got {self.segment_s}).")
        if not (math.isfinite(self.window_s) and self.window_s >= 0):
            raise TrainingError(f"--window-s must be 0 (off) or a positive number of seconds (got {self.window_s}).")
        for name in ("learning_rate", "disc_learning_rate", "grad_clip"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise TrainingError(f"--{name.replace('_', '-')} must be a positive number (got {value}).")
        if not 0 < self.val_share < 1:
            raise TrainingError(f"--val-share must be between 0 and 1 (got {self.val_share}).")
        if not 0 <= self.val_clips <= MAX_VAL_CLIPS:
            raise TrainingError(f"--val-clips must be between 0 and {MAX_VAL_CLIPS} (got {self.val_clips}).")
        for name in ("eval_every", "save_every", "freeze_blocks", "max_clip_s"):
            if getattr(self, name) < 0:
                raise TrainingError(f"--{name.replace('_', '-')} cannot be negative.")
        if self.disc_channels < 1:
            raise TrainingError("--disc-channels must be at least 1.")
        if self.log_every < 1:
            raise TrainingError("--log-every must be at least 1.")
        if self.upsample_to not in (0, SAMPLE_RATE, 2 * SAMPLE_RATE):
            raise TrainingError(f"--upsample-to takes 48000 (got {self.upsample_to}).")

    @property
    def segment_frames(self) -> int:
        return max(1, round(self.segment_s * FRAME_RATE))

    @property
    def window_frames(self) -> int:
        """Frames per convolution window (0: the whole segment at once)."""
        return 0 if self.window_s <= 0 else max(1, round(self.window_s * FRAME_RATE))

    @property
    def warmup_steps(self) -> int:
        return self.steps // 5 if self.gan_warmup_steps < 0 else self.gan_warmup_steps

    def to_dict(self) -> dict:
        record = asdict(self)
        for key, value in record.items():
            if isinstance(value, Path):
                record[key] = str(value)
        return record

    def differences(self, recorded: dict) -> list[str]:
        """The settings that differ from a recorded run's, besides those a resume may change."""
        mine = self.to_dict()
        return sorted(k for k, v in recorded.items() if k in mine and k not in RESUMABLE_CHANGES and mine[k] != v)
