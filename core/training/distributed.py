"""Many processes, one run: PyTorch DistributedDataParallel, gloo on CPUs and NCCL on GPUs.

``torchrun --nproc-per-node N -m core finetune ...`` runs the same command N times; each process reads
its rank from the environment torchrun sets (RANK, WORLD_SIZE, LOCAL_RANK), takes ``cuda:LOCAL_RANK``
when the command asked for a GPU, and trains its share of each step's segments. DDP averages the
gradients over the processes, so N processes with batch B take the steps one process takes with
batch N × B (every loss is a per-sample mean). Only rank 0 writes the run folder.

:func:`spawn` starts N processes on this machine without torchrun (the tests, the bench).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from dataclasses import dataclass

import torch
import torch.distributed as dist

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class World:
    rank: int = 0
    size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.size > 1

    def device(self, asked: str) -> str:
        """The device of this process: ``cuda:LOCAL_RANK`` when a GPU was asked for and there are several."""
        if self.distributed and asked.startswith("cuda"):
            return f"cuda:{self.local_rank}"
        return asked


def from_env() -> World:
    """The process's place from torchrun's variables (one process when they are not set)."""
    size = int(os.environ.get("WORLD_SIZE", "1"))
    return World(int(os.environ.get("RANK", "0")), size, int(os.environ.get("LOCAL_RANK", "0")))


def start(world: World, device: str) -> None:
    """Join the process group (NCCL for GPUs, gloo for CPUs); nothing for one process."""
    if not world.distributed or dist.is_initialized():
        return
    backend = "nccl" if device.startswith("cuda") else "gloo"
    if device.startswith("cuda"):
        torch.cuda.set_device(torch.device(device))
    dist.init_process_group(backend, rank=world.rank, world_size=world.size)
    logger.info("process %d of %d joined (%s)", world.rank, world.size, backend)


def stop(world: World) -> None:
    if world.distributed and dist.is_initialized():
        dist.destroy_process_group()


def barrier(world: World) -> None:
    if world.distributed and dist.is_initialized():
        dist.barrier()


def wrap(module: torch.nn.Module, world: World, device: str):
    """``module`` inside DistributedDataParallel (one process: the module itself)."""
    if not world.distributed:
        return module
    from torch.nn.parallel import DistributedDataParallel

    ids = [torch.device(device).index] if device.startswith("cuda") else None
    return DistributedDataParallel(module, device_ids=ids, broadcast_buffers=False)


def inner(module):
    """The module a DDP wrapper holds (or the module)."""
    return getattr(module, "module", module)


def local_passes(module):
    """Backward passes inside it add to the gradients without synchronising (DDP's no_sync)."""
    return module.no_sync() if hasattr(module, "no_sync") else contextlib.nullcontext()


def synchronise(module) -> None:
    """Average the gradients accumulated by :func:`local_passes` over the processes: a DDP forward that
    touches every trained parameter with weight zero, and its backward, outside no_sync."""
    if hasattr(module, "no_sync"):
        module("touch").backward()


def any_true(world: World, flag: bool) -> bool:
    """True on every process when it is true on one (a stop asked for on rank 0 stops them all)."""
    if not world.distributed:
        return flag
    value = torch.tensor([1.0 if flag else 0.0])
    if dist.get_backend() == "nccl":
        value = value.cuda()
    dist.all_reduce(value, op=dist.ReduceOp.MAX)
    return bool(value.item() > 0)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _entry(rank: int, size: int, port: int, fn, args) -> None:
    os.environ.update(
        {
            "RANK": str(rank),
            "WORLD_SIZE": str(size),
            "LOCAL_RANK": str(rank),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
        }
    )
    fn(*args)


def spawn(fn, processes: int, args: tuple = ()) -> None:
    """Run ``fn(*args)`` in ``processes`` new processes, each with torchrun's variables set."""
    import torch.multiprocessing as mp

    mp.start_processes(
        _entry, args=(processes, free_port(), fn, args), nprocs=processes, join=True, start_method="spawn"
    )
