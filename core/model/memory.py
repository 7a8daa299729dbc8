"""Device memory: figures, what new work could take now, clearing cached memory, and system stats (psutil)."""

from __future__ import annotations

import gc
import logging
import os
from dataclasses import asdict, dataclass

import psutil
import torch

from core.units import MIB

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DeviceMemory:
    device: str  # "cuda:0" or "cpu"
    allocated_mib: float  # memory held by live tensors (CUDA) or None-equivalent 0 on CPU
    reserved_mib: float  # memory held by PyTorch's caching allocator (CUDA)
    free_mib: float  # free memory on the card (CUDA) or available system RAM (CPU)
    total_mib: float  # card size (CUDA) or system RAM (CPU)

    def to_dict(self) -> dict:
        return {k: round(v, 1) if isinstance(v, float) else v for k, v in asdict(self).items()}


def device_memory(device: str) -> DeviceMemory:
    """Current memory figures for ``device``."""
    if device.startswith("cuda") and torch.cuda.is_available():
        dev = torch.device(device)
        free, total = torch.cuda.mem_get_info(dev)
        return DeviceMemory(
            device=device,
            allocated_mib=torch.cuda.memory_allocated(dev) / MIB,
            reserved_mib=torch.cuda.memory_reserved(dev) / MIB,
            free_mib=free / MIB,
            total_mib=total / MIB,
        )
    vm = psutil.virtual_memory()
    return DeviceMemory("cpu", 0.0, 0.0, vm.available / MIB, vm.total / MIB)


def free_bytes(device: str) -> float:
    """Memory new work could take now: free plus our allocator's cache on a GPU, available RAM on the CPU."""
    if device.startswith("cuda") and torch.cuda.is_available():
        dev = torch.device(device)
        free, _total = torch.cuda.mem_get_info(dev)
        return float(free + torch.cuda.memory_reserved(dev) - torch.cuda.memory_allocated(dev))
    return float(psutil.virtual_memory().available)


def release_cached(device: str) -> None:
    """Collect garbage and hand PyTorch's cached blocks back to the driver."""
    gc.collect()
    if device.startswith("cuda") and torch.cuda.is_available():
        torch.cuda.synchronize(torch.device(device))
        torch.cuda.empty_cache()


def clear_cached(device: str) -> dict:
    """Free cached device memory; allocated / reserved / free before and after (the caller holds the lock)."""
    before = device_memory(device).to_dict()
    release_cached(device)
    after = device_memory(device).to_dict()
    logger.info("cleared VRAM: reserved %.0f -> %.0f MiB", before["reserved_mib"], after["reserved_mib"])
    return {"before": before, "after": after}


def reserved_share(device: str) -> float:
    """Reserved memory as a share of the card (0 on CPU)."""
    m = device_memory(device)
    return m.reserved_mib / m.total_mib if device.startswith("cuda") and m.total_mib else 0.0


def reset_peak(device: str) -> None:
    if device.startswith("cuda") and torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats(torch.device(device))


def peak_mib(device: str) -> float | None:
    """Peak allocated memory since the last :func:`reset_peak` (None on CPU)."""
    if device.startswith("cuda") and torch.cuda.is_available():
        return torch.cuda.max_memory_allocated(torch.device(device)) / MIB
    return None


def is_out_of_memory(error: BaseException) -> bool:
    """True for CUDA out-of-memory errors (and the allocator's RuntimeError form)."""
    if isinstance(error, torch.cuda.OutOfMemoryError):
        return True
    return isinstance(error, RuntimeError) and "out of memory" in str(error).lower()


def system_stats(device: str) -> dict:
    """GPU memory, process RSS, system RAM and CPU load, as plain numbers."""
    vm = psutil.virtual_memory()
    process = psutil.Process(os.getpid())
    stats = {
        "device": device,
        "process_rss_mib": round(process.memory_info().rss / MIB, 1),
        "system_ram_used_mib": round((vm.total - vm.available) / MIB, 1),
        "system_ram_total_mib": round(vm.total / MIB, 1),
        "system_ram_percent": vm.percent,
        "cpu_percent": psutil.cpu_percent(interval=None),
        "cpu_count": psutil.cpu_count(),
    }
    if device.startswith("cuda") and torch.cuda.is_available():
        stats["gpu"] = device_memory(device).to_dict()
        stats["gpu_name"] = torch.cuda.get_device_name(torch.device(device))
    return stats
