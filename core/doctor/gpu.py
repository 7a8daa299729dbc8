"""GPU checks: the driver sees the GPU, PyTorch sees it, they mean the same card, the versions
fit together, the model sits where it should, and the jobs fit in its memory.

Each check is a pure function of facts: ``nvidia-smi`` output text and a dict of PyTorch facts
(``gather.torch_facts``), so every branch is testable on a machine without a GPU.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from core.doctor.findings import FAIL, PASS, SKIPPED, WARN, Finding, finding
from core.doctor.words import said

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
        error = {"error": smi_error} if smi_error else {"error_code": "smi_not_found"}
        return finding(name, title, SKIPPED, (said("smi_absent", **error), said("runs_on", device=device)))
    if not gpus:
        why = said("raw", text=smi_error) if smi_error else said("smi_no_gpu")
        return finding(name, title, FAIL, (why, said("asked_for", device=device)), said("fix_driver"), gpus=[])
    listed = "; ".join(f"{g['index']}: {g['name']} ({g['uuid']})" for g in gpus)
    return finding(name, title, PASS, said("gpus_listed", count=len(gpus), listed=listed), gpus=gpus)


def check_torch(device: str, torch: dict) -> Finding:
    """PyTorch sees CUDA and the chosen device index exists."""
    name, title = "gpu_torch", "GPU visible to PyTorch"
    cuda = {"cuda": torch.get("torch_cuda")} if torch.get("torch_cuda") else {"cuda_code": "torch_cpu_wheel"}
    build = said("torch_build", version=torch.get("torch_version"), **cuda)
    if not _wants_cuda(device):
        why = "torch_cuda_but" if torch.get("cuda_available") else "torch_no_cuda"
        return finding(name, title, SKIPPED, (said(why, device=device), build))
    if not torch.get("torch_cuda"):
        return finding(name, title, FAIL, (build, said("torch_cannot")), said("fix_torch_build"))
    if not torch.get("cuda_available"):
        visible = said("visible_devices", value=repr(torch.get("visible_devices")))
        return finding(name, title, FAIL, (said("torch_unavailable"), build, visible), said("fix_torch_unavailable"))
    index = _index(device)
    count = int(torch.get("device_count") or 0)
    if index >= count:
        too_few = said("torch_count", device=device, count=count)
        return finding(name, title, FAIL, too_few, said("fix_torch_count", last=max(count - 1, 0)))
    gpu = torch["devices"][index]
    seen = said("torch_ok", device=device, name=gpu["name"], capability=gpu["capability"], mib=gpu["total_mib"])
    return finding(name, title, PASS, (seen, build), device=gpu)


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
        return finding(name, title, SKIPPED, said("same_needs"))
    ours = devices[_index(device)]
    match = [g for g in gpus if _uuid(ours.get("uuid")) and _uuid(g["uuid"]) == _uuid(ours.get("uuid"))]
    if match:
        g = match[0]
        return finding(
            name,
            title,
            PASS,
            said("same_ok", device=device, index=g["index"], name=g["name"], uuid=g["uuid"]),
            smi_index=g["index"],
        )
    if not ours.get("uuid"):
        named = [g for g in gpus if g["name"] == ours["name"]]
        status = WARN if named else FAIL
        return finding(
            name,
            title,
            status,
            said("same_no_uuid", count=len(named), name=ours["name"]),
            said("fix_same_no_uuid"),
        )
    return finding(
        name,
        title,
        FAIL,
        said("same_other", device=device, uuid=ours["uuid"]),
        said("fix_same_other"),
    )


def _version(text: str | None) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text or "")[:2])


def check_versions(device: str, smi_header: str | None, torch: dict) -> Finding:
    """The driver supports the CUDA that torch was built with, and torch has kernels for the card."""
    name, title = "cuda_versions", "CUDA, driver and torch versions compatible"
    if not _wants_cuda(device):
        return finding(name, title, SKIPPED, said("runs_on", device=device))
    driver, driver_cuda = parse_smi_header(smi_header or "")
    built = torch.get("torch_cuda")
    if not driver or not built:
        return finding(name, title, SKIPPED, said("versions_needs"))
    facts = said(
        "versions_facts", driver=driver, driver_cuda=driver_cuda, torch=torch.get("torch_version"), built=built
    )
    fix = said("fix_versions", built=built, driver_cuda=driver_cuda)
    have, need = _version(driver_cuda), _version(built)
    if have[:1] < need[:1]:
        return finding(name, title, FAIL, facts, fix)
    devices = torch.get("devices") or []
    if _index(device) < len(devices):
        cap = devices[_index(device)]["capability"]
        arch = torch.get("arch_list") or []
        sm = "sm_" + cap.replace(".", "")
        if arch and sm not in arch and not _ptx_covers(cap, arch):
            no_kernels = said("versions_arch", capability=cap, arch=", ".join(arch))
            return finding(name, title, FAIL, (facts, no_kernels), said("fix_arch", sm=sm))
    if have < need:
        older = said("versions_older", driver_cuda=driver_cuda, built=built)
        return finding(name, title, WARN, (facts, older), fix)
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
        return finding(name, title, SKIPPED, said("no_model"))
    on = {"device": device, "dtype": dtype} if dtype else {"device": device}
    suffix = "_dtype" if dtype else ""
    if strays:
        more = len(strays) - STRAY_SHOWN
        counts = {"count": len(strays), "total": total, "shown": ", ".join(strays[:STRAY_SHOWN]), **on}
        stray = said(f"placement_strays{suffix}", **counts)
        return finding(
            name,
            title,
            FAIL,
            (stray, said("and_more", more=more)) if more > 0 else stray,
            said("fix_placement"),
            strays=strays,
        )
    return finding(name, title, PASS, said(f"placement_ok{suffix}", total=total, **on))


def check_memory(estimates: list[tuple[str, dict]], max_duration_s: float | None = None) -> Finding:
    """Free vs needed memory for a few job lengths, from the engine's own estimate (``MemoryEstimate``
    as a dict: seconds, peak_mib, available_mib, fits, message). The shortest must fit; longer ones that
    do not are refused by the engine with the same message (a warning here)."""
    name, title = "memory", "Free vs needed memory (30 s, 10 min, 30 min)"
    if not estimates:
        return finding(name, title, SKIPPED, said("memory_no_model"))
    parts, refused = [], []
    for label, e in estimates:
        over_limit = max_duration_s is not None and e["seconds"] > max_duration_s
        row = "memory_row_over" if over_limit else "memory_row"
        need, have = e["peak_mib"] / 1024, e["available_mib"] / 1024
        verdict = "fits" if e["fits"] else "does_not_fit"
        parts.append(said(row, length=label, need_gib=need, have_gib=have, verdict_code=verdict))
        if not e["fits"] and not over_limit:
            refused.append(label)
    evidence = tuple(parts)
    data = {"estimates": {label: e for label, e in estimates}}
    if not estimates[0][1]["fits"]:
        return finding(
            name,
            title,
            FAIL,
            evidence,
            said("fix_memory"),
            facts=data,
        )
    if refused:
        return finding(
            name,
            title,
            WARN,
            evidence,
            said("fix_memory_long", lengths=", ".join(refused)),
            facts=data,
        )
    return finding(name, title, PASS, evidence, facts=data)
