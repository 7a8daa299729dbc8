"""Collect the facts the checks judge: command output, versions, sizes, write attempts.
Everything here touches the machine; nothing here decides pass or fail."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from core.doctor.gpu import SMI_QUERY
from core.units import MIB

COMMAND_TIMEOUT_S = 15.0  # per external command (nvidia-smi, supervisorctl)
HEALTH_TIMEOUT_S = 3.0  # the port's /health probe
LOG_TAIL_BYTES = 256 * 1024  # bytes read from the end of each log


def run_command(argv: list[str]) -> tuple[str | None, str | None]:
    """(stdout, None), or (None, why it could not run). A non-zero exit with output still counts
    as output (supervisorctl status exits 3 for a stopped program)."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False)
    except FileNotFoundError:
        return None, f"{argv[0]} not found on PATH"
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"{argv[0]}: {e}"
    if done.returncode != 0 and not done.stdout.strip():
        return None, (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
    return done.stdout, None


def nvidia_smi() -> tuple[str | None, str | None, str | None]:
    """(GPU csv, plain header output, error)."""
    csv, error = run_command(["nvidia-smi", f"--query-gpu={SMI_QUERY}", "--format=csv,noheader,nounits"])
    header, _ = run_command(["nvidia-smi"]) if csv is not None else (None, None)
    return csv, header, error


def torch_facts() -> dict:
    """What PyTorch sees: version, CUDA build, devices (name, UUID, memory, capability), kernels."""
    import torch

    facts: dict = {
        "torch_version": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "cuda_available": bool(torch.cuda.is_available()),
        "device_count": 0,
        "devices": [],
        "arch_list": [],
        "visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }
    if facts["cuda_available"]:
        facts["device_count"] = torch.cuda.device_count()
        facts["arch_list"] = list(torch.cuda.get_arch_list())
        for i in range(facts["device_count"]):
            props = torch.cuda.get_device_properties(i)
            facts["devices"].append(
                {
                    "index": i,
                    "name": props.name,
                    "uuid": str(getattr(props, "uuid", "") or ""),
                    "total_mib": props.total_memory / MIB,
                    "capability": f"{props.major}.{props.minor}",
                }
            )
    return facts


def cpu(cpuinfo: Path = Path("/proc/cpuinfo")) -> tuple[str | None, frozenset[str]]:
    """The CPU's model name and feature flags (x86 ``flags``, Arm ``Features``); (None, {}) off Linux."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None, frozenset()
    model: str | None = None
    flags: frozenset[str] = frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key == "model name" and model is None:
            model = value.strip()
        elif key in ("flags", "features") and not flags:
            flags = frozenset(value.split())
    return model, flags


def audio_decoders(names: tuple[str, ...]) -> tuple[str | None, dict[str, bool], str | None]:
    """(PyAV's version, {decoder: present}, why PyAV cannot be imported)."""
    try:
        import av
    except ImportError as e:
        return None, {}, str(e)
    found = {}
    for name in names:
        try:
            av.codec.Codec(name, "r")
            found[name] = True
        except Exception:  # noqa: BLE001 - PyAV raises several kinds for an unknown codec
            found[name] = False
    return str(av.__version__), found, None


def model_files(source: str) -> tuple[str | None, str | None]:
    """(checkpoint directory, None) when the configured model's files are on this machine, else
    (None, why not). Looks at files only: never loads the model nor asks the hub."""
    from core.errors import WeightsError
    from core.model import weights

    try:
        if not weights.is_hub_id(source):
            path = weights.resolve_source(source)  # a local directory: no network
        else:
            from huggingface_hub import snapshot_download

            try:
                path = weights._check_directory(Path(snapshot_download(source, local_files_only=True)))
            except WeightsError:
                raise
            except Exception as e:  # noqa: BLE001 - not in the cache, whatever the hub library says
                return None, f"not in the Hugging Face cache ({type(e).__name__}). {weights.HOW_TO_PROVIDE}"
        weights.checkpoint_tensor_names(path)  # the safetensors headers can be read
    except WeightsError as e:
        return None, str(e)
    return str(path), None


_DECODE_TIMINGS: dict[tuple, dict[str, float]] = {}  # (model dir, device, frames) -> seconds per precision


def decode_timings(engine, frames: int) -> dict[str, float] | None:
    """Seconds to decode ``frames`` frames of codes with the loaded model's decoder in float32 and
    in bfloat16 (each after a one-frame warm-up), on this machine; None without a model. Measured
    once per process and model (the CPU does not change)."""
    import torch

    from core.codec import NUM_CODEBOOKS
    from core.errors import CodecError
    from core.nn.fast_decode import DecodeOptions, FastDecoder

    try:
        decoder = engine.model.decoder
    except CodecError:
        return None
    key = (str(engine.model_path), engine.device, frames)
    if key in _DECODE_TIMINGS:
        return dict(_DECODE_TIMINGS[key])
    with engine._lock:  # the model is shared: no job may run (or hook it, as the ladder does) meanwhile
        codes = torch.zeros(1, NUM_CODEBOOKS, frames, dtype=torch.long, device=engine.device)
        timings = {}
        for dtype in ("float32", "bfloat16"):
            fast = FastDecoder(decoder, DecodeOptions(dtype))
            with torch.inference_mode():
                fast.stream(1).step(codes[..., :1])  # first-call allocations are not the decode's cost
                started = time.perf_counter()
                fast.stream(1).step(codes)
                timings[dtype] = time.perf_counter() - started
            del fast
        _DECODE_TIMINGS[key] = timings
    return dict(timings)


def port(host: str, number: int) -> tuple[OSError | None, dict | None]:
    """(error binding host:port or None when free, our /health payload when something answers there)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT leftovers do not count
        try:
            sock.bind((host, number))
            return None, None
        except OSError as e:
            bind_error = e
    probe = "127.0.0.1" if host in ("0.0.0.0", "") else host
    try:
        with urllib.request.urlopen(f"http://{probe}:{number}/health", timeout=HEALTH_TIMEOUT_S) as response:
            return bind_error, json.loads(response.read(MIB))
    except (OSError, ValueError):
        return bind_error, None


def folder(path: Path) -> tuple[int | None, str | None]:
    """(free bytes, None) after making the folder and writing a file in it; or (None, why not)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".doctor-", delete=True) as f:
            f.write(b"codec-workbench doctor write test\n")
            f.flush()
            os.fsync(f.fileno())
        return shutil.disk_usage(path).free, None
    except OSError as e:
        return None, f"{type(e).__name__}: {e.strerror or e}"


def supervisor(conf: Path, program: str) -> tuple[str | None, str | None]:
    """``supervisorctl -c conf status program`` output, or why there is none."""
    if not conf.is_file():
        return None, f"{conf} not found"
    out, error = run_command([sys.executable, "-m", "supervisor.supervisorctl", "-c", str(conf), "status", program])
    if out is not None and ("refused connection" in out or "no such file" in out.lower()):
        return None, out.strip().splitlines()[-1]
    return out, error


def configured_port(repo: Path) -> int | None:
    """The port the app is configured to serve on under supervisord: ``CODEC_PORT`` in
    supervisord.local.conf (read last, so it wins) or supervisord.conf; None when neither sets one."""
    for name in ("supervisord.local.conf", "supervisord.conf"):
        try:
            text = (Path(repo) / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        found = re.findall(r"CODEC_PORT\s*=\s*\"?(\d+)", text)
        if found:
            return int(found[-1])
    return None


def log_tail(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(path.stat().st_size - LOG_TAIL_BYTES, 0))
            return f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
