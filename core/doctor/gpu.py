"""GPU checks: the driver sees the GPU, PyTorch sees it, they mean the same card, the versions
fit together, the model sits where it should, and the jobs fit in its memory.

Each check is a pure function of facts: ``nvidia-smi`` output text and a dict of PyTorch facts
(``gather.torch_facts``), so every branch is testable on a machine without a GPU.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from core.doctor.findings import FAIL, PASS, SKIPPED, WARN, Finding, finding

SMI_QUERY = "index,uuid,name,memory.total,memory.free,driver_version"  # nvidia-smi --query-gpu fields, in order
STRAY_SHOWN = 5  # stray tensors named in the evidence (all are in the JSON data)
_HEADER = re.compile(r"Driver Version:\s*([\d.]+).*?CUDA Version:\s*([\d.]+)", re.DOTALL)


def parse_smi_gpus(csv_text: str) -> list[dict]:
    """GPUs from ``nvidia-smi --query-gpu=SMI_QUERY --format=csv,noheader,nounits``."""
    gpus = []
    for line in csv_text.strip().splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) < 6 or not cells[0].isdigit():
            continue
        gpus.append(
            {
                "index": int(cells[0]),
                "uuid": cells[1],
                "name": cells[2],
                "total_mib": _number(cells[3]),
                "free_mib": _number(cells[4]),
                "driver": cells[5],
            }
        )
    return gpus


def parse_smi_header(text: str) -> tuple[str | None, str | None]:
    """(driver version, highest CUDA version the driver supports) from plain ``nvidia-smi`` output."""
    match = _HEADER.search(text or "")
    return (match.group(1), match.group(2)) if match else (None, None)


def _number(cell: str) -> float | None:
    try:
        return float(cell)
    except ValueError:
        return None  # "[N/A]" on some boards


def _wants_cuda(device: str) -> bool:
    return device.startswith("cuda")


def check_driver(device: str, smi_csv: str | None, smi_error: str | None = None) -> Finding:
    """The NVIDIA driver sees at least one GPU (``nvidia-smi``)."""
    name, title = "gpu_driver", "GPU visible to the driver (nvidia-smi)"
    gpus = parse_smi_gpus(smi_csv or "")
    if smi_csv is None and not _wants_cuda(device):
        return finding(
            name,
            title,
            SKIPPED,
            f"no NVIDIA driver tools ({smi_error or 'nvidia-smi not found'}); the engine runs on {device}",
        )
    if not gpus:
        why = smi_error or "nvidia-smi listed no GPU"
        return finding(
            name,
            title,
            FAIL,
            f"{why}; {device} was asked for",
            "install the NVIDIA driver (or check the container runs with --gpus all), then run "
            "`nvidia-smi`; or start with --device cpu",
            gpus=[],
        )
    listed = "; ".join(f"{g['index']}: {g['name']} ({g['uuid']})" for g in gpus)
    return finding(name, title, PASS, f"{len(gpus)} GPU(s): {listed}", gpus=gpus)


def check_torch(device: str, torch: dict) -> Finding:
    """PyTorch sees CUDA and the chosen device index exists."""
    name, title = "gpu_torch", "GPU visible to PyTorch"
    build = f"torch {torch.get('torch_version')} (CUDA build {torch.get('torch_cuda') or 'none: CPU-only wheel'})"
    if not _wants_cuda(device):
        status = SKIPPED
        why = "CUDA is available but" if torch.get("cuda_available") else "no CUDA in PyTorch and"
        return finding(name, title, status, f"{why} the engine runs on {device}; {build}")
    if not torch.get("torch_cuda"):
        return finding(
            name,
            title,
            FAIL,
            f"{build} cannot use a GPU",
            "install the CUDA build of the pinned torch (see requirements.txt), or use --device cpu",
        )
    if not torch.get("cuda_available"):
        return finding(
            name,
            title,
            FAIL,
            f"torch.cuda.is_available() is False; {build}; CUDA_VISIBLE_DEVICES={torch.get('visible_devices')!r}",
            "run `nvidia-smi`; check CUDA_VISIBLE_DEVICES and that the driver supports this CUDA build",
        )
    index = _index(device)
    count = int(torch.get("device_count") or 0)
    if index >= count:
        return finding(
            name,
            title,
            FAIL,
            f"{device} asked for but PyTorch sees {count} GPU(s)",
            f"use --device cuda:0..cuda:{max(count - 1, 0)}, or check CUDA_VISIBLE_DEVICES",
        )
    gpu = torch["devices"][index]
    return finding(
        name,
        title,
        PASS,
        f"{device} = {gpu['name']}, compute {gpu['capability']}, {gpu['total_mib']:.0f} MiB; {build}",
        device=gpu,
    )


def _index(device: str) -> int:
    return int(device.split(":", 1)[1]) if ":" in device else 0


def _uuid(value: str | None) -> str:
    return (value or "").lower().removeprefix("gpu-")


def check_same_gpu(device: str, smi_csv: str | None, torch: dict) -> Finding:
    """The card PyTorch calls ``device`` is one the driver lists (by UUID; CUDA_VISIBLE_DEVICES
    renumbers cards, so index 0 in PyTorch need not be index 0 in nvidia-smi)."""
    name, title = "gpu_same", "Driver and PyTorch mean the same GPU"
    gpus = parse_smi_gpus(smi_csv or "")
    devices = torch.get("devices") or []
    if not _wants_cuda(device) or not gpus or _index(device) >= len(devices):
        return finding(name, title, SKIPPED, "needs a GPU seen by both nvidia-smi and PyTorch")
    ours = devices[_index(device)]
    match = [g for g in gpus if _uuid(ours.get("uuid")) and _uuid(g["uuid"]) == _uuid(ours.get("uuid"))]
    if match:
        g = match[0]
        return finding(
            name,
            title,
            PASS,
            f"PyTorch {device} is nvidia-smi GPU {g['index']} ({g['name']}, {g['uuid']})",
            smi_index=g["index"],
        )
    if not ours.get("uuid"):
        named = [g for g in gpus if g["name"] == ours["name"]]
        status = WARN if named else FAIL
        return finding(
            name,
            title,
            status,
            f"PyTorch gives no UUID; {len(named)} nvidia-smi GPU(s) named {ours['name']}",
            "compare `nvidia-smi -L` with CUDA_VISIBLE_DEVICES",
        )
    return finding(
        name,
        title,
        FAIL,
        f"PyTorch {device} has UUID {ours['uuid']}, which nvidia-smi does not list",
        "the process sees another driver or container than the shell: check CUDA_VISIBLE_DEVICES "
        "and `nvidia-smi -L` inside the service's environment",
    )


def _version(text: str | None) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text or "")[:2])


def check_versions(device: str, smi_header: str | None, torch: dict) -> Finding:
    """The driver supports the CUDA that torch was built with, and torch has kernels for the card."""
    name, title = "cuda_versions", "CUDA, driver and torch versions compatible"
    if not _wants_cuda(device):
        return finding(name, title, SKIPPED, f"the engine runs on {device}")
    driver, driver_cuda = parse_smi_header(smi_header or "")
    built = torch.get("torch_cuda")
    if not driver or not built:
        return finding(
            name, title, SKIPPED, "needs nvidia-smi's header and a CUDA build of torch (see the checks above)"
        )
    facts = f"driver {driver} (supports CUDA up to {driver_cuda}), torch {torch.get('torch_version')} built for CUDA {built}"
    fix = (
        f"update the NVIDIA driver to one that supports CUDA {built}, or install the torch wheel built for "
        f"CUDA {driver_cuda} (same torch version)"
    )
    have, need = _version(driver_cuda), _version(built)
    if have[:1] < need[:1]:
        return finding(name, title, FAIL, facts, fix)
    problems = []
    devices = torch.get("devices") or []
    if _index(device) < len(devices):
        cap = devices[_index(device)]["capability"]
        arch = torch.get("arch_list") or []
        sm = "sm_" + cap.replace(".", "")
        if arch and sm not in arch and not _ptx_covers(cap, arch):
            return finding(
                name,
                title,
                FAIL,
                f"{facts}; the card is compute {cap} but this torch has kernels for {', '.join(arch)}",
                "install a torch build that lists " + sm,
            )
    if have < need:
        problems.append(f"driver's CUDA {driver_cuda} is older than {built} (minor-version compatibility only)")
        return finding(name, title, WARN, f"{facts}; {problems[0]}", fix)
    return finding(name, title, PASS, facts)


def _ptx_covers(capability: str, arch: list[str]) -> bool:
    """A ``compute_XY`` PTX entry at or below the card's capability can be JIT-compiled for it."""
    cap = int(capability.replace(".", ""))
    return any(a.startswith("compute_") and int(a.split("_")[1]) <= cap for a in arch)


def check_placement(named_tensors: Iterable, device: str, dtype: str | None = None) -> Finding:
    """Every parameter and buffer on ``device`` (and floating ones in ``dtype``); names the strays."""
    name, title = "placement", "Every parameter and buffer on the chosen device"
    target_type, _, target_index = device.partition(":")
    total, strays = 0, []
    for tensor_name, tensor in named_tensors:
        total += 1
        where = tensor.device
        wrong_device = where.type != target_type or (target_index != "" and str(where.index) != target_index)
        wrong_dtype = dtype is not None and tensor.is_floating_point() and str(tensor.dtype) != f"torch.{dtype}"
        if wrong_device or wrong_dtype:
            strays.append(f"{tensor_name} ({where}, {str(tensor.dtype).removeprefix('torch.')})")
    if total == 0:
        return finding(name, title, SKIPPED, "no model loaded")
    if strays:
        shown = ", ".join(strays[:STRAY_SHOWN]) + (
            f" and {len(strays) - STRAY_SHOWN} more" if len(strays) > STRAY_SHOWN else ""
        )
        return finding(
            name,
            title,
            FAIL,
            f"{len(strays)} of {total} tensors are not on {device}{' in ' + dtype if dtype else ''}: {shown}",
            "something moved part of the model after loading: restart the service (the engine loads "
            "every tensor onto the device) and look for code calling .to()/.cpu() on the model",
            strays=strays,
        )
    return finding(name, title, PASS, f"all {total} tensors on {device}{' in ' + dtype if dtype else ''}")


def check_memory(estimates: list[tuple[str, dict]], max_duration_s: float | None = None) -> Finding:
    """Free vs needed memory for a few job lengths, from the engine's own estimate (``MemoryEstimate``
    as a dict: seconds, peak_mib, available_mib, fits, message). The shortest must fit; longer ones that
    do not are refused by the engine with the same message (a warning here)."""
    name, title = "memory", "Free vs needed memory (30 s, 10 min, 30 min)"
    if not estimates:
        return finding(name, title, SKIPPED, "no model loaded: the engine cannot estimate")
    parts, refused = [], []
    for label, e in estimates:
        over_limit = max_duration_s is not None and e["seconds"] > max_duration_s
        verdict = "fits" if e["fits"] else "does not fit"
        note = " (over max_duration_s: refused anyway)" if over_limit else ""
        parts.append(f"{label}: ≈{e['peak_mib'] / 1024:.2f} of {e['available_mib'] / 1024:.2f} GiB, {verdict}{note}")
        if not e["fits"] and not over_limit:
            refused.append(label)
    evidence = "; ".join(parts)
    data = {"estimates": {label: e for label, e in estimates}}
    if not estimates[0][1]["fits"]:
        return finding(
            name,
            title,
            FAIL,
            evidence,
            "free device memory (other processes: `nvidia-smi`), use --dtype bfloat16 on a GPU, or a larger GPU",
            facts=data,
        )
    if refused:
        return finding(
            name,
            title,
            WARN,
            evidence,
            f"jobs of {' and '.join(refused)} will be refused: free memory "
            "or lower CODEC_MAX_DURATION_S so users learn the limit up front",
            facts=data,
        )
    return finding(name, title, PASS, evidence, facts=data)
