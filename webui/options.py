"""The web UI's own options, from the same one-table mechanism as the engine's settings
(``core.options``): every field has a flag and a ``CODEC_*`` variable and is checked when made.

The login (``CODEC_AUTH_USER`` / ``CODEC_AUTH_PASSWORD``) stays environment-only: a password
given as a flag would show in ``ps`` and in shell history.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from core.errors import SettingsError
from core.options import option
from webui.server import DEFAULT_HOST, DEFAULT_PORT
from webui.serving import url_input
from webui.serving.workspace import DEFAULT_MAX_AGE_S

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")  # what --log-level takes


@dataclass(frozen=True)
class WebOptions:
    host: str = option(DEFAULT_HOST, "interface to bind")
    port: int = option(DEFAULT_PORT, "TCP port (0: the first free one from 7860 up)")
    enable_url_input: bool = option(False, "allow audio from public http(s) URLs")
    url_max_mb: float = option(url_input.DEFAULT_MAX_MB, "largest URL download, MiB")
    url_timeout_s: float = option(
        url_input.DEFAULT_TIMEOUT_S, "time limit of a URL download, seconds", flag="--url-timeout"
    )
    temp_dir: str = option("", "where per-request files go (default: a folder in the system temp folder)")
    keep_files_s: float = option(DEFAULT_MAX_AGE_S, "request files older than this are deleted, seconds")
    log_level: str = option("INFO", "how much to log", choices=LOG_LEVELS)

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise SettingsError(f"port {self.port} is not a TCP port: use 1..65535 (or 0 for any free one).")
        for name in ("url_max_mb", "url_timeout_s", "keep_files_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise SettingsError(f"{name} must be a positive number, not {value!r}.")
        if self.log_level not in LOG_LEVELS:
            raise SettingsError(f"log level {self.log_level!r} is not one of {', '.join(LOG_LEVELS)}.")
