"""Host checks: the CPU's decode precision (measured), pinned packages, the port, folders (space and write access),
and the app's own supervisord state with its last exit reason. Pure functions of the facts that
``gather.py`` collects (command output, sizes, errors)."""

from __future__ import annotations

import errno
import re

from core.doctor.findings import FAIL, PASS, SKIPPED, WARN, Finding, finding
from core.doctor.words import Said, said
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
SWEEP = said("sweep")


def check_cpu_decode(
    device: str, decode_dtype: str, cpu_model: str | None, timings: dict[str, float] | None, frames: int
) -> Finding:
    """On CPU: is the decoder's precision the faster one here? Judged from a short decode measured in
    both precisions on this machine (bf16 is fast only where the CPU computes it natively: 2.9x
    faster on a Xeon with AMX, 32x slower on an EPYC without it), never from CPU flags."""
    name, title = "cpu_decode", "CPU decode precision"
    status, evidence, fix, facts = _cpu_decode(device, decode_dtype, cpu_model, timings, frames)
    return finding(name, title, status, (*evidence, SWEEP), fix, facts)


def _cpu_decode(device, decode_dtype, cpu_model, timings, frames) -> tuple[str, tuple[Said, ...], Said | str, dict]:
    """(status, evidence, fix, facts) of the CPU decode precision check."""
    if device.startswith("cuda"):
        return SKIPPED, (said("decodes_on", device=device),), "", {"device": device}
    cpu = {"cpu": cpu_model} if cpu_model else {"cpu_code": "cpu_this"}
    if timings is None:
        return SKIPPED, (said("cpu_no_model", **cpu),), said("fix_load_model"), {}
    fp32, bf16 = timings["float32"], timings["bfloat16"]
    facts = {"cpu": cpu_model, "decode_dtype": decode_dtype, "frames": frames, "float32_s": fp32, "bfloat16_s": bf16}
    measured = said("cpu_measured", frames=frames, fp32=fp32, bf16=bf16, **cpu)
    if decode_dtype == "bfloat16" and bf16 > fp32 * BF16_TOO_SLOW:
        return WARN, (said("cpu_bf16_slow", ratio=bf16 / fp32), measured), said("fix_decode_fp32"), facts
    if decode_dtype == "float32" and fp32 > bf16 * BF16_WORTH_IT:
        return PASS, (said("cpu_fp32_exact"), measured, said("cpu_bf16_would", ratio=fp32 / bf16)), "", facts
    return PASS, (said("cpu_chosen", dtype=decode_dtype), measured), "", facts


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
        return finding(name, title, SKIPPED, said("pins_none"))
    missing = [p for p in pins if installed.get(p) is None]
    wrong = [f"{p} {installed[p]} (pinned {v})" for p, v in pins.items() if installed.get(p) not in (None, v)]
    if missing or wrong:
        problems = ((said("pins_missing", names=", ".join(missing)),) if missing else ()) + (
            (said("pins_other", names=", ".join(wrong)),) if wrong else ()
        )
        return finding(name, title, FAIL, problems, said("fix_pins"), missing=missing, wrong=wrong)
    return finding(name, title, PASS, said("pins_ok", count=len(pins)), pins=pins)


def check_port(host: str, port: int, bind_error: OSError | None, health: dict | None) -> Finding:
    """The port is free, or the process answering there is this app (its /health)."""
    name, title = "port", f"Port {port} free or ours"
    where = f"{host}:{port}"
    if bind_error is None:
        return finding(name, title, PASS, said("port_free", where=where), state="free")
    if health is not None and "engine" in health and "versions" in health:
        return finding(
            name,
            title,
            PASS,
            said("port_ours", where=where, pid=health.get("pid"), status=health.get("status")),
            state="ours",
            pid=health.get("pid"),
        )
    if getattr(bind_error, "errno", None) == errno.EADDRINUSE:
        return finding(
            name,
            title,
            FAIL,
            said("port_taken", where=where),
            said("fix_port_taken", port=port),
            state="taken",
        )
    return finding(
        name,
        title,
        FAIL,
        said("port_error", where=where, error=str(bind_error)),
        said("fix_port_error"),
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
            said("folder_unwritable", place=path, error=write_error),
            said("fix_folder_unwritable", place=path),
            folder=path,
        )
    free_mib = (free_bytes or 0) / MIB
    data = {"folder": path, "free_mib": round(free_mib, 1), "need_mib": need_mib}
    if free_mib < need_mib:
        return finding(
            name,
            title,
            FAIL,
            said("folder_full", place=path, free_mib=free_mib, need_mib=need_mib),
            said("fix_folder_full", place=path),
            facts=data,
        )
    return finding(name, title, PASS, said("folder_ok", place=path, free_gib=free_mib / 1024), facts=data)


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
        why = {"why": status_error} if status_error else {"why_code": "sv_no_answer"}
        evidence: tuple[Said, ...] = (said("sv_not_running", **why),)
        if reason:  # history, not the present: an old SIGKILL is never quoted as current
            evidence += (said("sv_logged", reason=reason),)
        return finding(name, title, SKIPPED, evidence, said("fix_sv_start"), last_exit=reason)
    state, rest = parse_supervisor_status(status_text)
    if state == "RUNNING":  # a running program's earlier exits count only under this supervisord
        reason = last_exit(supervisord_log, program_log, current_only=True)
    data = {"state": state, "last_exit": reason}
    shown = {"state": f"{state} {rest}".strip()} if state else {"state_code": "sv_not_configured"}
    now = (said("sv_state", program=PROGRAM, **shown),)
    if state == "RUNNING":
        return finding(
            name, title, PASS, now + ((said("sv_earlier_exit", reason=reason),) if reason else ()), facts=data
        )
    then = (said("sv_last_exit", reason=reason),) if reason else ()
    if state in ("STARTING", "BACKOFF", "STOPPING"):
        return finding(name, title, WARN, now + then, said("fix_sv_wait"), facts=data)
    return finding(name, title, FAIL, now + then, said("fix_sv_failed"), facts=data)
