"""The fine-tuned checkpoint: ``OUT/final/``, in the base's own layout.

It is the base checkpoint with the decoder's trained tensors replaced, written by the official class's
``save_pretrained`` beside the base's other files (``preprocessor_config.json``, the random-weights
marker), so it loads wherever the base loads (``qwen_tts.Qwen3TTSTokenizer.from_pretrained``, the
engine, ``--compare-model``). The encoder and the codebooks are the base's tensors, unchanged: the
fine-tuned checkpoint encodes exactly the base's codes. A model card (``README.md``) says what it was
trained from and on, and that random base weights say nothing about quality.

The folder is written beside the old one and renamed into place: a stop or a crash while exporting
leaves the previous export (or none), never half of one.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from core.errors import TrainingError

logger = logging.getLogger(__name__)

WEIGHT_AND_CONFIG = ("config.json", "model.safetensors", "model.safetensors.index.json")  # written by save_pretrained


def export(model, base_path: Path, trained: dict, folder: Path, card: str) -> Path:
    """Write ``model`` (the base's ``Qwen3TTSTokenizerV2Model`` on the CPU) with the decoder tensors of
    ``trained`` to ``folder``; returns the folder."""
    missing, unexpected = model.decoder.load_state_dict(trained, strict=False)
    if unexpected or any(not key.startswith("quantizer.") for key in missing):
        raise TrainingError(
            f"The trained decoder does not fit the base (missing {missing[:3]}, unexpected {unexpected[:3]})."
        )
    folder = Path(folder)
    tmp = folder.with_name(f".{folder.name}.tmp")
    old = folder.with_name(f".{folder.name}.old")
    for leftover in (tmp, old):
        shutil.rmtree(leftover, ignore_errors=True)
    try:
        tmp.mkdir(parents=True)
        model.save_pretrained(tmp, safe_serialization=True)
        for item in Path(base_path).iterdir():
            if item.is_file() and item.name not in WEIGHT_AND_CONFIG and item.name != "README.md":
                shutil.copy2(item, tmp / item.name)
        (tmp / "README.md").write_text(card, encoding="utf-8")
        if folder.exists():
            folder.rename(old)
        tmp.rename(folder)
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        if old.exists() and not folder.exists():
            old.rename(folder)
        raise TrainingError(
            f"The fine-tuned checkpoint could not be written to {folder} ({e}); free disk space and resume."
        ) from e
    shutil.rmtree(old, ignore_errors=True)
    logger.info("exported %s", folder)
    return folder


def model_card(info: dict) -> str:
    """The README.md of an exported checkpoint, from the run's facts."""
    base_val, final_val = info.get("val_base") or {}, info.get("val_final") or {}
    rows = "\n".join(
        f"| {name} | {base_val.get(name, float('nan')):.4f} | {final_val.get(name, float('nan')):.4f} |"
        for name in sorted(set(base_val) | set(final_val))
    )
    warning = (
        "\n**The base checkpoint has random weights: these figures say nothing about audio quality.**\n"
        if info.get("random_weights")
        else ""
    )
    return f"""# Fine-tuned Qwen3-TTS-Tokenizer-12Hz decoder
{warning}
- Base: `{info["base"]}` (encoder and codebooks unchanged: codes are the base's)
- Data: {info["data"]} — {info["train_clips"]} training clips ({info["train_hours"]:.3f} h), {info["val_clips"]} held out
- Steps: {info["steps"]} × batch {info["batch_size"]} × {info["segment_s"]:.2f} s segments{info.get("processes_text", "")}
- Precision: {info["precision"]} ({info["precision_reason"]})
- Losses: {info["losses"]}
- Trained parts: {info["trained"]}

## Held-out clips, before (base) and after

| metric | base | fine-tuned |
|---|---|---|
{rows}

`mel_distance`: multi-resolution log-mel L1 (lower is closer to the original audio).
Made with Codec Workbench (`python -m core finetune`).
"""
