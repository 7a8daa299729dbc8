"""Where a shared test's link points: an address the room's phones can open, not the one the
owner's browser happened to use.

In order: the first origin of ``--public-origin`` (the operator named where the page is served);
else the origin the owner's browser used (``webui.serving.origins.own_origin``: its Host, or what a
trusted proxy names) when that is not a loopback address; else, when the server listens beyond
loopback, this machine's address on the port it listens on (the link says so); else the loopback
link with a warning that no other device can open it, and what to do.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from dataclasses import dataclass

import psutil

from webui.serving import origins

LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost")
ANY_ADDRESS = ("", "0.0.0.0", "::", "[::]")  # listening on every interface


@dataclass(frozen=True)
class LinkBase:
    url: str  # scheme://host[:port], no slash at the end
    note: str | None = None  # a catalogue key (share.link_*) the page shows beside the link, or None
    fields: dict | None = None  # the note's fields


def is_loopback(host: str) -> bool:
    """True for a host name or address that only this machine can reach (127.0.0.0/8, ::1, localhost)."""
    bare = host.strip().strip("[]").lower()
    if bare in LOOPBACK_NAMES or bare.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(bare).is_loopback
    except ValueError:
        return False


def url_of(origin: origins.Origin) -> str:
    scheme, host, port = origin
    return f"{scheme}://{host}" if origins.DEFAULT_PORTS.get(scheme) == port else f"{scheme}://{host}:{port}"


def first_public(public_origin: str) -> origins.Origin | None:
    """The first origin ``--public-origin`` lists (the order the operator wrote), or None."""
    for item in (public_origin or "").split(","):
        if item.strip():
            return origins.parse(item)
    return None


def machine_address() -> str | None:
    """An address of this machine other devices may reach: the IPv4 address of the interface the
    default route leaves by (no packet is sent), else the first non-loopback, non-link-local IPv4
    address of an interface that is up; None without one."""
    found: list[str] = []
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("198.51.100.1", 9))  # TEST-NET-2: connect() on UDP only picks the route
            found.append(str(probe.getsockname()[0]))
    except OSError:
        pass
    up = {name for name, stats in psutil.net_if_stats().items() if stats.isup}
    for name, addresses in psutil.net_if_addrs().items():
        found += [a.address for a in addresses if name in up and a.family == socket.AF_INET]
    return next((a for a in found if _reachable(a)), None)


def _reachable(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return not (ip.is_loopback or ip.is_link_local or ip.is_unspecified)


def link_base(public_origin: str, seen: origins.Origin | None, listening: tuple[str | None, int | None]) -> LinkBase:
    """Where a shared test's link points (the module's rule). ``seen``: the origin the owner's
    browser used; ``listening``: (host, port) the server is bound to."""
    public = first_public(public_origin)
    if public is not None:
        return LinkBase(url_of(public))
    if seen is not None and not is_loopback(seen[1]):
        return LinkBase(url_of(seen))
    host, port = listening
    scheme = seen[0] if seen is not None else "http"
    here = url_of(seen) if seen is not None else f"http://127.0.0.1:{port}"
    if host is not None and port and not is_loopback(host):
        address = machine_address() if host in ANY_ADDRESS else host
        if address is not None:
            address = f"[{address}]" if ":" in address else address
            return LinkBase(f"{scheme}://{address}:{port}", "share.link_machine", {"address": address, "seen": here})
    return LinkBase(here, "share.link_loopback", {"seen": here})


@dataclass(frozen=True)
class LinkSettings:
    """What the link's rule needs from the server: ``--public-origin`` as written, the trusted
    proxies, and where the server listens once launched (a function: known only after launch)."""

    public_origin: str = ""
    trusted: frozenset[str] = frozenset()
    listening: Callable[[], tuple[str | None, int | None]] = lambda: (None, None)

    def for_scope(self, scope) -> LinkBase:
        """The link's base for a request (its ASGI scope; None outside a server)."""
        seen = origins.own_origin(scope, self.trusted) if scope else None
        return link_base(self.public_origin, seen, self.listening())
