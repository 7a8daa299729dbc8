"""GPU utilisation over a run, from nvidia-smi, for benches that must say whether the GPUs starved."""

from __future__ import annotations

import subprocess
import threading
import time

import numpy as np


class GpuSampler:
    """nvidia-smi's utilisation of every GPU, twice a second, in a thread; ``stop`` returns the mean
    per GPU over a time window (perf_counter seconds)."""

    def __init__(self):
        self.samples: list[tuple[float, list[float]]] = []
        self._stop = threading.Event()

        def poll():
            while not self._stop.wait(0.5):
                try:
                    out = subprocess.run(
                        ["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits"],
                        capture_output=True,
                        text=True,
                        timeout=5,
                    ).stdout
                    self.samples.append((time.perf_counter(), [float(x) for x in out.split()]))
                except (OSError, ValueError, subprocess.TimeoutExpired):
                    return

        self._thread = threading.Thread(target=poll, daemon=True)
        self._thread.start()

    def stop(self, start: float, end: float) -> list[float] | None:
        self._stop.set()
        self._thread.join(timeout=10)
        inside = [u for t, u in self.samples if start <= t <= end]
        if not inside:
            return None
        return [float(np.mean([u[i] for u in inside])) for i in range(len(inside[0]))]
