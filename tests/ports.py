"""Ports for the servers tests start (the app, supervisord's replicas, nginx, PostgreSQL), reserved
until the test process ends.

A port picked by binding port 0 and letting go is in the kernel's ephemeral range, and nothing holds
it until the server binds it: meanwhile any outgoing connection on the machine may take it as its
source port. Worse, a client polling ``/ready`` before the server listens can connect to *itself*
(TCP simultaneous open: its source port chosen equal to the port it calls) and read its own request
back as the answer: ``BadStatusLine: GET /ready HTTP/1.1``, which broke the replicas' PostgreSQL
case beside the other test process's servers. So a reserved port is

- below the ephemeral range (``/proc/sys/net/ipv4/ip_local_port_range``): the kernel never hands it
  to a socket by itself, so no outgoing connection takes it and no client connects to itself on it;
- held by this process through a lock file (``flock``) that every test process on the machine, of
  any worktree, checks before it reserves a port, until the process ends (the lock goes with it);
- free when reserved (nobody listens on it)."""

from __future__ import annotations

import fcntl
import os
import random
import socket
import tempfile
from pathlib import Path

LOCKS = Path(tempfile.gettempdir()) / "codec-workbench-test-ports"
LOWEST = 20_000  # below: ports of services people run (databases, dev servers) are common
_held: dict[int, int] = {}  # port -> the open lock file's descriptor, for this process's life


def ephemeral_range() -> tuple[int, int]:
    """The ports the kernel picks for outgoing connections and port 0 (Linux; its default elsewhere)."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32_768, 60_999


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def reserve(port: int) -> bool:
    """Hold ``port`` for this process if no test process holds it and nobody listens on it."""
    if port in _held:
        return False
    LOCKS.mkdir(exist_ok=True)
    fd = os.open(LOCKS / str(port), os.O_CREAT | os.O_RDWR, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    if not _bindable(port):
        os.close(fd)  # closing the descriptor lets the lock go
        return False
    _held[port] = fd
    return True


def reserve_port() -> int:
    """A port below the ephemeral range, free and held for this test process (see the module)."""
    return reserve_block(1)


def reserve_block(count: int, align: int = 1) -> int:
    """The first of ``count`` consecutive ports, all reserved; the first a multiple of ``align``
    (the replicas' config numbers its ports ``PP00``, ``PP01``: ``align=100``)."""
    top = ephemeral_range()[0] - count
    for _ in range(500):
        first = random.randrange(LOWEST // align, top // align) * align
        taken = []
        for port in range(first, first + count):
            if not reserve(port):
                break
            taken.append(port)
        else:
            return first
        for port in taken:
            release(port)
    raise RuntimeError(f"no {count} free ports below {top + count} after 500 tries")


def release(port: int) -> None:
    """Let ``port`` go before the process ends (a port reserved and not used)."""
    fd = _held.pop(port, None)
    if fd is not None:
        os.close(fd)
