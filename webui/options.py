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
from core.units import MIB
from webui.serving import origins, url_input
from webui.serving.limits import LimitSettings
from webui.serving.throttle import trusted_set
from webui.serving.workspace import DEFAULT_MAX_AGE_S, DEFAULT_MAX_TEMP_MB

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")  # what --log-level takes
ASSETS = Path(__file__).resolve().parent / "assets"  # the example clips (package data)
STATS_EVERY_S = 2.0  # seconds between system stats refreshes
FINETUNE_RUNS = "finetune-runs"  # the Fine-tune tab's runs, in --data-dir unless --finetune-runs-dir
_LIMITS = LimitSettings()  # the per-client limits' defaults (one home: webui.serving.limits)


@dataclass(frozen=True)
class UiOptions:
    temp_root: Path = field(default_factory=default_temp_root)  # where request folders go
    max_age_s: float = DEFAULT_MAX_AGE_S  # request folders older than this are deleted
    max_temp_bytes: int = int(DEFAULT_MAX_TEMP_MB * MIB)  # the temp root's disk cap (webui.serving.workspace)
    url_policy: url_input.UrlPolicy | None = None  # None: audio from a URL is off
    examples: tuple[Path, ...] = field(default_factory=lambda: tuple(sorted(ASSETS.glob("*.wav"))))
    stats_every_s: float = STATS_EVERY_S
    compare_models_dir: Path | None = None  # checkpoint folders the System tab may load as the second model
    second_for_visitors: bool = False  # visitors may load/unload the second checkpoint (else the operator only)
    trusted_proxies: frozenset[str] = frozenset()  # proxies whose X-Real-IP names the client
    public_origin: str = ""  # --public-origin as written: its first origin is where shared tests' links point
    finetune_data_root: Path | None = None  # the folders the Fine-tune tab may read (None: the example clips only)
    finetune_runs_dir: Path | None = None  # where its runs go (None: finetune-runs/ in --data-dir)


@dataclass(frozen=True)
class WebOptions(ServiceOptions):
    enable_url_input: bool = option(False, "allow audio from public http(s) URLs")
    url_max_mb: float = option(url_input.DEFAULT_MAX_MB, "largest URL download, MiB")
    url_timeout_s: float = option(
        url_input.DEFAULT_TIMEOUT_S, "time limit of a URL download, seconds", flag="--url-timeout"
    )
    keep_files_s: float = option(DEFAULT_MAX_AGE_S, "request files older than this are deleted, seconds")
    log_level: str = option("INFO", "how much to log", choices=LOG_LEVELS)
    trusted_proxies: str = option(
        "", "addresses of reverse proxies whose X-Real-IP names the client, comma-separated (empty: none)"
    )
    public_origin: str = option(
        "",
        "origins the page is served at (https://codec.example.org, http://192.168.1.20:7860), comma-separated; "
        "the first is where shared tests' links and QR codes point; pages of other origins may not open the "
        "Live socket or send state-changing requests (empty: the app's own)",
    )
    client_model_jobs: int = option(_LIMITS.model_jobs, "model-queue jobs one client may have waiting or running")
    client_jobs: int = option(_LIMITS.jobs, "jobs of any other queue one client may have waiting or running")
    client_starts_per_min: float = option(_LIMITS.starts_per_min, "jobs one client may start per minute")
    client_calls_per_min: float = option(_LIMITS.calls_per_min, "events of any kind one client may send per minute")
    client_unread: int = option(_LIMITS.unread, "/gradio_api/call results one client may leave unread")
    client_live_sessions: int = option(_LIMITS.live_sessions, "Live sessions one client may hold at once")
    max_temp_mb: float = option(
        DEFAULT_MAX_TEMP_MB, "disk the temp folder may hold (request folders and Gradio's cache), MiB"
    )
    compare_models_dir: str = option(
        "", "folder whose checkpoint subfolders the System tab may load as the second checkpoint (empty: off)"
    )
    second_for_visitors: bool = option(
        False, "let visitors load and unload the second checkpoint (default: only clients on this machine's loopback)"
    )
    finetune_data_root: str = option(
        "", "folder whose subfolders the Fine-tune tab may train on (empty: the example clips only)"
    )
    finetune_runs_dir: str = option(
        "", f"where the Fine-tune tab's runs go, a folder each (default: {FINETUNE_RUNS}/ in --data-dir)"
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in (
            "url_max_mb",
            "url_timeout_s",
            "keep_files_s",
            "client_model_jobs",
            "client_jobs",
            "client_starts_per_min",
            "client_calls_per_min",
            "client_unread",
            "client_live_sessions",
            "max_temp_mb",
        ):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise SettingsError(f"{name} must be a positive number, not {value!r}.")
        if self.log_level not in LOG_LEVELS:
            raise SettingsError(f"log level {self.log_level!r} is not one of {', '.join(LOG_LEVELS)}.")
        try:
            self.public_origins()
        except ValueError as e:
            raise SettingsError(f"public_origin: {e}; give scheme://host[:port], comma-separated.") from e
        try:
            trusted_set(self.trusted_proxies)
        except ValueError as e:
            raise SettingsError(
                f"trusted_proxies must be IP addresses separated by commas, not {self.trusted_proxies!r}."
            ) from e

    def public_origins(self) -> frozenset:
        """``--public-origin`` parsed (``webui.serving.origins``)."""
        return origins.parse_list(self.public_origin)

    def limit_settings(self) -> LimitSettings:
        """The per-client limits these options set (``webui.serving.limits``)."""
        return LimitSettings(
            model_jobs=self.client_model_jobs,
            jobs=self.client_jobs,
            starts_per_min=self.client_starts_per_min,
            calls_per_min=self.client_calls_per_min,
            unread=self.client_unread,
            live_sessions=self.client_live_sessions,
        )
