"""The web UI's options: :class:`WebOptions` (flags and ``CODEC_*`` variables, from the same
one-table mechanism as the engine's settings, ``core.options``, checked when made) and
:class:`UiOptions` (what ``build_app`` takes, split from them by ``webui.__main__``).

Where the service listens and writes (host, port, temp folder) is ``core.settings.ServiceOptions``,
which this table extends: ``python -m core doctor`` reads the same fields, so both agree by
construction. The login (``CODEC_AUTH_USER`` / ``CODEC_AUTH_PASSWORD``) stays environment-only: a
password given as a flag would show in ``ps`` and in shell history.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from core.errors import SettingsError
from core.options import option
from core.settings import ServiceOptions, default_temp_root
from webui.serving import url_input
from webui.serving.workspace import DEFAULT_MAX_AGE_S

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")  # what --log-level takes
ASSETS = Path(__file__).resolve().parent / "assets"  # the example clips (package data)
STATS_EVERY_S = 2.0  # seconds between system stats refreshes


@dataclass(frozen=True)
class UiOptions:
    temp_root: Path = field(default_factory=default_temp_root)  # where request folders go
    max_age_s: float = DEFAULT_MAX_AGE_S  # request folders older than this are deleted
    url_policy: url_input.UrlPolicy | None = None  # None: audio from a URL is off
    examples: tuple[Path, ...] = field(default_factory=lambda: tuple(sorted(ASSETS.glob("*.wav"))))
    stats_every_s: float = STATS_EVERY_S


@dataclass(frozen=True)
class WebOptions(ServiceOptions):
    enable_url_input: bool = option(False, "allow audio from public http(s) URLs")
    url_max_mb: float = option(url_input.DEFAULT_MAX_MB, "largest URL download, MiB")
    url_timeout_s: float = option(
        url_input.DEFAULT_TIMEOUT_S, "time limit of a URL download, seconds", flag="--url-timeout"
    )
    keep_files_s: float = option(DEFAULT_MAX_AGE_S, "request files older than this are deleted, seconds")
    log_level: str = option("INFO", "how much to log", choices=LOG_LEVELS)

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("url_max_mb", "url_timeout_s", "keep_files_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise SettingsError(f"{name} must be a positive number, not {value!r}.")
        if self.log_level not in LOG_LEVELS:
            raise SettingsError(f"log level {self.log_level!r} is not one of {', '.join(LOG_LEVELS)}.")
