"""Host checks: the CPU's decode precision (measured), pinned packages, the port, folders (space and write access),
and the app's own supervisord state with its last exit reason. Pure functions of the facts that
``gather.py`` collects (command output, sizes, errors)."""

from __future__ import annotations

import errno
import re

from core.doctor.findings import FAIL, PASS, SKIPPED, WARN, Finding, finding
from core.units import MIB

PROGRAM = "webui"  # [program:webui] in supervisord.conf
_PIN = re.compile(r"^\s*([A-Za-z0-9_.\-\[\]]+)\s*==\s*([^\s;#]+)")
_EXITED = re.compile(r"(?P<when>^\S+ \S+) .*?exited: " + PROGRAM + r"\b(?P<why>.*)$")
_GAVE_UP = re.compile(r"gave up: " + PROGRAM + r"\b")
_SPAWNED = re.compile(r"(?P<when>^\S+ \S+) .*?spawned: '" + PROGRAM + r"'")
_STARTED = re.compile(r"supervisord started with pid")
_STAMP = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")  # a log line's time, as supervisord and our logs write it


BF16_WORTH_IT = 1.3  # bf16 decode is advised only when measured at least this much faster than fp32
BF16_TOO_SLOW = 1.1  # a bf16 decode measured this much slower than fp32 is a warning
SWEEP = "every precision measured here: python -m core precision CLIP, or the Check a port tab (docs/parity.md)"


def check_cpu_decode(
    device: str, decode_dtype: str, cpu_model: str | None, timings: dict[str, float] | None, frames: int
) -> Finding:
    """On CPU: is the decoder's precision the faster one here? Judged from a short decode measured in
    both precisions on this machine (bf16 is fast only where the CPU computes it natively: 2.9x
    faster on a Xeon with AMX, 32x slower on an EPYC without it), never from CPU flags."""
    name, title = "cpu_decode", "CPU decode precision"
    found = _cpu_decode(name, title, device, decode_dtype, cpu_model, timings, frames)
    return finding(found.name, found.title, found.status, f"{found.evidence}; {SWEEP}", found.fix, found.data)


def _cpu_decode(name, title, device, decode_dtype, cpu_model, timings, frames) -> Finding:
    if device.startswith("cuda"):
        return finding(name, title, SKIPPED, f"decodes run on {device}", device=device)
    cpu_name = cpu_model or "this CPU"
    if timings is None:
        return finding(
            name,
            title,
            SKIPPED,
            f"no model loaded, so no decode could be measured on {cpu_name}",
            "run the doctor with the model loaded (without --no-model)",
        )
    fp32, bf16 = timings["float32"], timings["bfloat16"]
    facts = {"cpu": cpu_model, "decode_dtype": decode_dtype, "frames": frames, "float32_s": fp32, "bfloat16_s": bf16}
    measured = f"{frames} frames decoded in {fp32:.3f} s (fp32) and {bf16:.3f} s (bf16) on {cpu_name}"
    if decode_dtype == "bfloat16" and bf16 > fp32 * BF16_TOO_SLOW:
        return finding(
            name,
            title,
            WARN,
            f"bf16 decode is {bf16 / fp32:.1f}x slower than fp32 here: {measured}",
            "run with --decode-dtype float32 (CODEC_DECODE_DTYPE=float32)",
            facts,
        )
    if decode_dtype == "float32" and fp32 > bf16 * BF16_WORTH_IT:
        return finding(
            name,
            title,
            PASS,
            f"fp32 decode (exact); {measured}: --decode-dtype bfloat16 would decode {fp32 / bf16:.1f}x "
            "faster here (guarded; about 20 dB SNR from the fp32 decode on random weights)",
            facts=facts,
        )
    return finding(name, title, PASS, f"{decode_dtype} decode, the faster or exact choice: {measured}", facts=facts)


def parse_pins(requirements_text: str) -> dict[str, str]:
    """{distribution: version} of the ``name==version`` lines (extras dropped, names normalized)."""
    pins = {}
    for line in requirements_text.splitlines():
        match = _PIN.match(line)
        if match:
            pins[_normal(match.group(1).split("[")[0])] = match.group(2)
    return pins


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def check_packages(pins: dict[str, str], installed: dict[str, str | None]) -> Finding:
    """Every pinned package installed at its pinned version (``installed``: name -> version or None)."""
    name, title = "packages", "Pinned package versions present"
    if not pins:
        return finding(name, title, SKIPPED, "no requirements.txt with == pins found")
    missing = [p for p in pins if installed.get(p) is None]
    wrong = [f"{p} {installed[p]} (pinned {v})" for p, v in pins.items() if installed.get(p) not in (None, v)]
    if missing or wrong:
        problems = ([f"missing: {', '.join(missing)}"] if missing else []) + (
            [f"other version: {', '.join(wrong)}"] if wrong else []
        )
        return finding(
            name,
            title,
            FAIL,
            "; ".join(problems),
            ".venv/bin/pip install -r requirements.txt -r requirements-judging.txt",
            missing=missing,
            wrong=wrong,
        )
    return finding(name, title, PASS, f"all {len(pins)} pins installed", pins=pins)


def check_port(host: str, port: int, bind_error: OSError | None, health: dict | None) -> Finding:
    """The port is free, or the process answering there is this app (its /health)."""
    name, title = "port", f"Port {port} free or ours"
    where = f"{host}:{port}"
    if bind_error is None:
        return finding(name, title, PASS, f"{where} is free", state="free")
    if health is not None and "engine" in health and "versions" in health:
        return finding(
            name,
            title,
            PASS,
            f"{where} is served by Codec Workbench (pid {health.get('pid')}, {health.get('status')})",
            state="ours",
            pid=health.get("pid"),
        )
    if getattr(bind_error, "errno", None) == errno.EADDRINUSE:
        return finding(
            name,
            title,
            FAIL,
            f"{where} is taken by another program (not our /health)",
            f"see who holds it: `ss -ltnp 'sport = :{port}'`; stop it or set CODEC_PORT to a free port",
            state="taken",
        )
    return finding(
        name,
        title,
        FAIL,
        f"cannot listen on {where}: {bind_error}",
        "use a host this machine has (CODEC_HOST) and a port above 1024 (CODEC_PORT)",
        state="error",
    )


def check_folder(
    name: str, title: str, path: str, free_bytes: int | None, write_error: str | None, need_mib: float
) -> Finding:
    """A folder the app writes to: exists or can be made, a file can be written, enough free space."""
    if write_error is not None:
        return finding(
            name,
            title,
            FAIL,
            f"cannot write in {path}: {write_error}",
            f"make it writable for the service's user (`mkdir -p {path} && chown $USER {path}`) "
            "or point the setting elsewhere",
            folder=path,
        )
    free_mib = (free_bytes or 0) / MIB
    data = {"folder": path, "free_mib": round(free_mib, 1), "need_mib": need_mib}
    if free_mib < need_mib:
        return finding(
            name,
            title,
            FAIL,
            f"{path}: only {free_mib:.0f} MiB free, {need_mib:.0f} MiB needed",
            f"free space there (`du -sh {path}/*`), or point the setting to a larger disk",
            facts=data,
        )
    return finding(name, title, PASS, f"{path}: writable, {free_mib / 1024:.1f} GiB free", facts=data)


def parse_supervisor_status(text: str) -> tuple[str | None, str]:
    """(state, rest) of our program's line in ``supervisorctl status`` output, e.g.
    ``webui  FATAL  Exited too quickly (process log may have details)``."""
    for line in (text or "").splitlines():
        parts = line.split(None, 2)
        if len(parts) >= 2 and parts[0] == PROGRAM:
            return parts[1], parts[2] if len(parts) > 2 else ""
    return None, ""


def last_exit(supervisord_log: str, program_log: str, current_only: bool = False) -> str | None:
    """The last exit supervisord logged for our program, with the last error line of the program's
    own log from that run (between its spawn and its exit: an older run's error is not this exit's
    cause). ``current_only``: only exits since supervisord last started (a RUNNING
    program's earlier exits under this supervisord, not those of a run days ago)."""
    lines = supervisord_log.splitlines()
    if current_only:
        starts = [i for i, line in enumerate(lines) if _STARTED.search(line)]
        lines = lines[starts[-1] :] if starts else lines
    exits = [(i, m) for i, m in enumerate(_EXITED.match(line) for line in lines) if m]
    if not exits:
        return None
    at, last = exits[-1]
    reason = f"{PROGRAM} exited{last.group('why')} at {last.group('when')}"
    if any(_GAVE_UP.search(line) for line in lines[at:]):
        reason += ", then supervisord gave up (FATAL: too many quick restarts)"
    spawned = [m.group("when") for m in (_SPAWNED.match(line) for line in lines[:at]) if m]
    since, until = (spawned[-1][:19] if spawned else ""), last.group("when")[:19]
    errors = [
        line.strip()
        for line in program_log.splitlines()
        if re.search(r"\b(Error|Exception|ERROR|CRITICAL)\b", line)
        and "Traceback" not in line
        and (not _STAMP.match(line) or since <= line[:19] <= until)
    ]
    return reason + (f"; last error in its log: {errors[-1]}" if errors else "")


def check_supervisor(
    status_text: str | None, status_error: str | None, supervisord_log: str, program_log: str
) -> Finding:
    """The app's own supervisord: is our program RUNNING, and why did it last exit."""
    name, title = "supervisor", "supervisord state and last exit"
    reason = last_exit(supervisord_log, program_log)
    if status_text is None:
        evidence = f"supervisord is not running here ({status_error or 'no answer'})"
        if reason:  # history, not the present: an old SIGKILL is never quoted as current
            evidence += f"; when it last ran, its log recorded: {reason}"
        return finding(
            name,
            title,
            SKIPPED,
            evidence,
            "start it with `make run` (or supervisord -c supervisord.conf)",
            last_exit=reason,
        )
    state, rest = parse_supervisor_status(status_text)
    if state == "RUNNING":  # a running program's earlier exits count only under this supervisord
        reason = last_exit(supervisord_log, program_log, current_only=True)
    data = {"state": state, "last_exit": reason}
    if state == "RUNNING":
        return finding(
            name,
            title,
            PASS,
            f"{PROGRAM} RUNNING {rest}".strip() + (f"; earlier exit: {reason}" if reason else ""),
            facts=data,
        )
    if state in ("STARTING", "BACKOFF", "STOPPING"):
        return finding(
            name,
            title,
            WARN,
            f"{PROGRAM} {state} {rest}".strip() + (f"; last exit: {reason}" if reason else ""),
            "wait a minute, then `supervisorctl -c supervisord.conf status`; if it loops, read "
            "`supervisorctl -c supervisord.conf tail webui`",
            facts=data,
        )
    return finding(
        name,
        title,
        FAIL,
        f"{PROGRAM} {state or 'not configured'} {rest}".strip() + (f"; last exit: {reason}" if reason else ""),
        "read the reason above (`supervisorctl -c supervisord.conf tail webui`), fix it, then "
        "`supervisorctl -c supervisord.conf restart webui`",
        facts=data,
    )
