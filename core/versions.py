"""Installed versions of the packages that decide the codec's behaviour (token files record them,
``/health`` shows them)."""

from __future__ import annotations

from importlib import metadata

from core import __version__

SELF = "codec-workbench"  # this project's distribution name


def installed_versions(names) -> dict[str, str | None]:
    """name -> installed version, None where missing; this project's own version is the running
    code's (``core.__version__``, the one version source), installed or not."""
    found: dict[str, str | None] = {}
    for name in names:
        if name == SELF:
            found[name] = __version__
            continue
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found
