"""Ports for test servers (tests/ports.py): below the kernel's ephemeral range, free, and held for
the test process that reserved them against every other test process on the machine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests import ports

ROOT = Path(__file__).resolve().parent.parent


def test_a_reserved_port_is_below_the_ephemeral_range_and_free():
    low, _high = ports.ephemeral_range()
    reserved = [ports.reserve_port() for _ in range(20)]
    assert len(set(reserved)) == 20 and all(ports.LOWEST <= p < low for p in reserved)
    assert all(ports._bindable(p) for p in reserved)  # reserved for a server, not listened on
    base = ports.reserve_block(2, align=100)
    assert base % 100 == 0 and base + 1 < low


def test_another_test_process_cannot_take_a_reserved_port():
    port = ports.reserve_port()
    code = f"from tests import ports\nprint(ports.reserve({port}), ports.reserve({port + 1}))"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    held_by_us, free_beside = other.stdout.split()
    assert held_by_us == "False", other.stderr
    assert free_beside == str(port + 1 not in ports._held and ports._bindable(port + 1))
    ports.release(port)
    again = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert again.stdout.split()[0] == "True"  # let go: the other process may have it now


def test_no_test_picks_a_server_port_by_binding_port_0_and_letting_go():
    """The way the replicas' flake came: ``bind(0)``, read the port, close, start a server on it."""
    found = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if path.name == Path(__file__).name:
            continue
        text = path.read_text(encoding="utf-8")
        for name in ("def _free_port", "def free_port() -> int:\n    with socket"):
            if name in text:
                found.append(f"{path.relative_to(ROOT)}: {name.splitlines()[0]}")
    assert not found, f"reserve ports through tests/ports.py: {found}"
