"""``python -m core finetune DATA -o OUT --model BASE --steps N``: fine-tune the decoder (docs/training.md).

Under ``torchrun --nproc-per-node N -m core finetune ...`` the same command trains on N processes (DDP);
only the first one prints and writes the run folder.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from core.training.settings import CHECKPOINTING, PRECISIONS, FinetuneSettings

_FLAGS = (  # (flag, settings field, type, help): the run's options beyond DATA, -o and --model
    ("--steps", "steps", int, "optimizer steps"),
    ("--batch-size", "batch_size", int, "segments per step (per process under torchrun)"),
    ("--accumulate", "accumulate", int, "micro-batches per step whose gradients add up (memory of batch / N)"),
    ("--segment-s", "segment_s", float, "seconds per training segment (whole 80 ms frames)"),
    (
        "--window-s",
        "window_s",
        float,
        "train the convolutions in windows of this many seconds with left context (0: off)",
    ),
    ("--learning-rate", "learning_rate", float, "AdamW learning rate of the decoder"),
    ("--val-clips", "val_clips", int, "held-out clips (0: --val-share of the clips)"),
    ("--val-share", "val_share", float, "share of the clips held out when --val-clips is 0"),
    ("--freeze-blocks", "freeze_blocks", int, "leave the first N convolution blocks untrained"),
    ("--disc-channels", "disc_channels", int, "width of the discriminators' first layers"),
    ("--gan-warmup-steps", "gan_warmup_steps", int, "mel-only steps before the discriminators join (-1: a fifth)"),
    ("--eval-every", "eval_every", int, "steps between held-out evaluations and samples (0: start and end only)"),
    ("--save-every", "save_every", int, "steps between resumable states (0: the end only)"),
    ("--log-every", "log_every", int, "steps between progress lines"),
    ("--seed", "seed", int, "seed of the split, the segments and the discriminators"),
    ("--max-clip-s", "max_clip_s", float, "longer clips are cut to this many seconds"),
    ("--upsample-to", "upsample_to", int, "48000: train a 48 kHz decoder (needs the decoder family)"),
    ("--audio-column", "audio_column", str, "manifest field / table column with the audio"),
    ("--data-root", "data_root", Path, "folder every audio path a manifest names must lie in"),
)


def add_parsers(sub) -> dict:
    p = sub.add_parser("finetune", help="fine-tune the decoder on a dataset (codes stay the base's)")
    p.add_argument(
        "data", help="what `tokenize` reads (folder, .jsonl, .parquet, .tar shards, datasets folder) or its output"
    )
    p.add_argument("-o", "--out", type=Path, required=True, help="run folder: new or empty (or a run to --resume)")
    defaults = FinetuneSettings(data=".", out=Path("."))
    for flag, field, kind, text in _FLAGS:
        metavar = {int: "N", float: "X"}.get(kind, "PATH" if kind is Path else "NAME")
        p.add_argument(
            flag,
            dest=f"ft_{field}",
            type=kind,
            metavar=metavar,
            default=getattr(defaults, field),
            help=f"{text} (default: %(default)s)",
        )
    p.add_argument(
        "--precision", choices=PRECISIONS, default="auto", help="fp32, bf16 autocast, fp16 + GradScaler, or auto"
    )
    p.add_argument(
        "--checkpointing", choices=CHECKPOINTING, default="auto", help="activation checkpointing per decoder block"
    )
    p.add_argument("--no-gan", action="store_true", help="mel and loudness losses only (no discriminators)")
    p.add_argument("--freeze-transformer", action="store_true", help="leave the decoder's transformer untrained")
    p.add_argument("--frozen-on-device", action="store_true", help="keep the frozen codebooks on the device too")
    p.add_argument("--resume", action="store_true", help="continue the run in OUT from its last saved state")
    p.add_argument("--plan", action="store_true", help="print the plan (data, precision, memory) as JSON and stop")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (logs only)")
    return {"finetune": cmd_finetune}


def settings_of(args: argparse.Namespace) -> FinetuneSettings:
    from core.settings import settings_from_args

    engine = settings_from_args(args)  # --model and --device, as every command reads them
    values = {field: getattr(args, f"ft_{field}") for _flag, field, _kind, _text in _FLAGS}
    return FinetuneSettings(
        data=args.data, out=args.out, model=engine.model, device=engine.device, precision=args.precision,
        checkpointing=args.checkpointing, adversarial=not args.no_gan, freeze_transformer=args.freeze_transformer,
        frozen_off_device=not args.frozen_on_device, resume=args.resume, **values,
    )  # fmt: skip


def cmd_finetune(args) -> int:
    from core.training import distributed, finetune, plan_finetune

    settings = settings_of(args)
    world = distributed.from_env()
    if args.plan:
        print(json.dumps(plan_finetune(settings), indent=2, ensure_ascii=False))
        return 0
    bar = _Bar(settings.steps, show=world.is_main and not args.no_progress)
    try:
        result = finetune(settings, on_progress=bar, world=world)
    finally:
        bar.close()
    if world.is_main:
        print(result["message"])
        base, final = result.get("val_base") or {}, result.get("val_final") or {}
        if "mel_distance" in base and "mel_distance" in final:
            print(f"held-out mel distance: {base['mel_distance']:.4f} (base) -> {final['mel_distance']:.4f}")
        if result.get("random_weights"):
            print("note: the base has random weights; these figures say nothing about audio quality")
    return 0 if result["status"] in ("done", "stopped") else 1


class _Bar:
    """A tqdm bar of steps with the latest losses and ETA (stderr)."""

    def __init__(self, steps: int, show: bool):
        self._bar = None
        if show:
            from tqdm import tqdm

            self._bar = tqdm(total=steps, unit="step", desc="finetune", dynamic_ncols=True, file=sys.stderr)

    def __call__(self, record: dict) -> None:
        if self._bar is None:
            return
        if record["kind"] == "step":
            self._bar.update(record["step"] - self._bar.n)
            losses = ", ".join(f"{k} {v:.3f}" for k, v in record["loss"].items())
            self._bar.set_postfix_str(f"{losses}, {record['audio_s_per_s']:.1f} audio s/s", refresh=False)
        elif record["kind"] == "eval":
            self._bar.write(
                f"step {record['step']}: held-out " + ", ".join(f"{k} {v:.4f}" for k, v in record["val"].items())
            )

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
