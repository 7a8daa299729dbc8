"""Installed versions of the packages that decide the codec's behaviour (token files record them,
``/health`` shows them)."""

from __future__ import annotations

from importlib import metadata

from core import __version__

SELF = "codec-workbench"  # this project's distribution name


def installed_versions(names) -> dict[str, str | None]:
    """name -> installed version, None where missing; this project's own version also from a
    checkout that was not pip-installed."""
    found: dict[str, str | None] = {}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = __version__ if name == SELF else None
    return found
