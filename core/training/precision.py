"""The arithmetic a run trains in, chosen once and said in words.

- ``bf16``: autocast to bfloat16 for the decoder's convolutions and matmuls; weights, optimizer and
  losses stay fp32. bfloat16 has fp32's exponent range, so gradients do not underflow: no GradScaler.
- ``fp16``: autocast to float16 with a GradScaler (float16's range is small: unscaled gradients
  underflow to zero). For GPUs without native bfloat16.
- ``fp32``: no autocast. The default on a CPU, where bf16 autocast is emulated on many CPUs and was
  measured 32× slower for the decode (docs/training.md).

``auto`` picks bf16 on a GPU that has it natively, fp16 on a GPU that does not, fp32 on a CPU.
Asking for bf16 where the device lacks it is refused (an emulated bf16 is slower, never faster).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

import torch

from core.errors import TrainingError

CPU_BF16_FLAGS = ("avx512_bf16", "amx_bf16")  # /proc/cpuinfo flags of CPUs with native bfloat16 arithmetic


REASONS = {  # why a precision was chosen, by code (the page says the same code from its catalogue)
    "asked_fp32": "asked for: fp32 weights and arithmetic (no autocast)",
    "asked_bf16": "asked for: bf16 autocast on {device} (native bfloat16; no GradScaler needed)",
    "asked_fp16": "asked for: fp16 autocast with a GradScaler on {device}",
    "auto_bf16": "auto: {device} has native bfloat16, so bf16 autocast (no GradScaler needed)",
    "auto_fp16": "auto: {device} lacks native bfloat16, so fp16 autocast with a GradScaler",
    "auto_cpu": "auto: on a CPU fp32 (bf16 autocast is emulated on many CPUs and was measured far slower)",
}


@dataclass(frozen=True)
class Precision:
    name: str  # fp32 | bf16 | fp16
    why: str  # a key of REASONS
    device: str = ""  # the device's name, as the reason says it

    @property
    def reason(self) -> str:
        """Why it was chosen, in English (the plan, the log and the model card show it)."""
        return REASONS[self.why].format(device=self.device)

    @property
    def dtype(self) -> torch.dtype | None:
        """The autocast dtype (None: no autocast)."""
        return {"bf16": torch.bfloat16, "fp16": torch.float16}.get(self.name)

    @property
    def needs_scaler(self) -> bool:
        return self.name == "fp16"

    def autocast(self, device: str):
        if self.dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=torch.device(device).type, dtype=self.dtype)

    def scaler(self, device: str):
        """A GradScaler, enabled only for fp16 (a disabled one passes losses and steps through)."""
        return torch.amp.GradScaler(torch.device(device).type, enabled=self.needs_scaler)


def cpu_has_bf16() -> bool:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return any(flag in text.split() for flag in CPU_BF16_FLAGS)


def check_device(device: str) -> None:
    if device == "cpu":
        return
    if not device.startswith("cuda:") or not device[5:].isdigit():
        raise TrainingError(f"Unknown device {device!r}: use cpu or cuda:N.")
    if not torch.cuda.is_available():
        raise TrainingError(f"{device} was asked for but CUDA is not available here; use --device cpu.")
    if int(device[5:]) >= torch.cuda.device_count():
        raise TrainingError(f"{device} does not exist: this machine has {torch.cuda.device_count()} GPU(s).")


def choose(requested: str, device: str) -> Precision:
    """The precision of ``requested`` (fp32 | bf16 | fp16 | auto) on ``device``, or a refusal in words."""
    check_device(device)
    on_gpu = device.startswith("cuda")
    if on_gpu:
        index = int(device[5:])
        name = torch.cuda.get_device_name(index)
        native_bf16 = torch.cuda.get_device_capability(index) >= (8, 0)
    else:
        name, native_bf16 = "this CPU", cpu_has_bf16()
    if requested == "fp32":
        return Precision("fp32", "asked_fp32")
    if requested == "bf16":
        if not native_bf16:
            raise TrainingError(
                f"{name} has no native bfloat16: bf16 would be emulated (slower, never faster). "
                "Use --precision fp16 on a GPU, or fp32."
            )
        return Precision("bf16", "asked_bf16", name)
    if requested == "fp16":
        if not on_gpu:
            raise TrainingError("--precision fp16 is for CUDA GPUs (a CPU has no fast float16); use fp32 or bf16.")
        return Precision("fp16", "asked_fp16", name)
    if on_gpu and native_bf16:
        return Precision("bf16", "auto_bf16", name)
    if on_gpu:
        return Precision("fp16", "auto_fp16", name)
    return Precision("fp32", "auto_cpu")
