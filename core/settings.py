"""The option tables, built once at the edge from CLI flags and environment.

- :class:`Settings`: the engine's (model, device, dtype, limits, chunking); every entry point
  (``python -m core``, ``python -m webui``, supervisord) builds one with :func:`settings_from_args`
  and hands it to the engine; nothing below the edge reads the environment.
- :class:`AudioLimits`: what guards every way audio comes in; made from the settings by
  :meth:`Settings.audio_limits` (its defaults are the settings' defaults, from the same constants).
- :class:`ServiceOptions`: where the web service listens and writes (host, port, temp folder); the
  web UI's options (``webui.options.WebOptions``) extend it and ``python -m core doctor`` reads it,
  so both see the same flags, variables and defaults.

Every field is an option (``core.options``): it has a flag and a ``CODEC_*`` variable, and it is
checked when the object is made (``__post_init__``), whichever way it was built.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from core import options
from core.anchors.catalog import ANCHORS, DEFAULT_ANCHORS, parse_anchors
from core.codec import SAMPLES_PER_FRAME
from core.errors import SettingsError
from core.options import option
from core.units import MIB

MAX_DURATION_S = 1800.0  # seconds (30 min): the longest input accepted unless --max-duration says otherwise
MAX_FILE_MB = 1024.0  # MiB: the largest input file accepted unless --max-file-mb says otherwise
MAX_PEAK_DBFS = 60.0  # dB over full scale (1000x): louder float audio is refused (3.4e38 made NaN metrics)
DEFAULT_HOST = "127.0.0.1"  # the web UI listens on loopback only unless told otherwise
DEFAULT_PORT = 7860  # Gradio's usual port
TEMP_FOLDER = "codec-workbench"  # request folders go to <system temp>/TEMP_FOLDER unless --temp-dir says otherwise
DEFAULT_MODEL = "Qwen/Qwen3-TTS-Tokenizer-12Hz"  # hub id of the published checkpoint
DTYPES = ("float32", "bfloat16")  # float32 is the published dtype
_DEVICE_RE = re.compile(r"^(cpu|cuda:\d+)$")
_POSITIVE = (
    "max_duration_s",
    "max_file_mb",
    "max_peak_dbfs",
    "encode_chunk_s",
    "encode_span_s",
    "batch_audio_s",
    "min_chunk_s",
    "live_max_s",
    "ladder_max_audio_s",
    "abx_max_region_s",
    "abx_session_ttl_s",
    "share_ttl_s",
)
_SHARES = ("cleanup_threshold", "max_batch_memory_fraction")  # in (0, 1]
MAX_LIVE_PACKET = 8  # 640 ms: beyond it a live session stops feeling live
LIVE_WINOGRAD_TILES = (0, 2, 4, 6)  # outputs per Winograd tile a CPU live decoder may use (core.nn.winograd)
DATA_DIR_NAME = "codec-workbench"  # folder under $XDG_DATA_HOME (or ~/.local/share) for stored results


def default_data_dir(env: Mapping[str, str] | None = None) -> str:
    """Where stored results (blind-test answers) go unless CODEC_DATA_DIR says otherwise:
    outside the repository, in the user's XDG data folder."""
    env = os.environ if env is None else env
    base = env.get("XDG_DATA_HOME") or str(Path(env.get("HOME") or Path.home()) / ".local" / "share")
    return str(Path(base) / DATA_DIR_NAME)


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def default_device() -> str:
    """``cuda:0`` when CUDA is available, else ``cpu``."""
    return "cuda:0" if cuda_available() else "cpu"


@dataclass(frozen=True)
class AudioLimits:
    """What audio may come in. Build it with :meth:`Settings.audio_limits`; the defaults here are the
    settings' defaults (for library callers without settings: ``load_audio(path)``)."""

    max_duration_s: float = MAX_DURATION_S  # seconds
    max_file_bytes: int = int(MAX_FILE_MB * MIB)  # bytes
    min_samples: int = SAMPLES_PER_FRAME  # samples at 24 kHz; shorter than one frame is refused
    max_peak: float = 10 ** (MAX_PEAK_DBFS / 20)  # |sample| (1.0 = full scale); louder audio is refused
    keep_rate_hz: int | None = None  # also keep a clip above 24 kHz at this rate (judging a 48 kHz decoder)


@dataclass(frozen=True)
class Settings:
    model: str = option(DEFAULT_MODEL, "local checkpoint directory or hub id")
    device: str = option("cpu", "one explicit device: cpu or cuda:N (default: cuda:0 if available; never 'auto')")
    dtype: str = option("float32", "float32 (published) or bfloat16 (GPUs with native bf16 only)")
    max_duration_s: float = option(MAX_DURATION_S, "longest input accepted, seconds (30 min)", flag="--max-duration")
    max_file_mb: float = option(MAX_FILE_MB, "largest input file accepted, MiB")
    max_peak_dbfs: float = option(
        MAX_PEAK_DBFS, "loudest sample accepted, dB over full scale (60: 1000x); louder float audio is refused"
    )
    cleanup_threshold: float = option(
        0.8, "after a job, clear cached VRAM when reserved memory passes this share of the card"
    )
    encode_chunk_s: float = option(20.0, "audio seconds per encoder convolution window (sets encode activation memory)")
    encode_span_s: float = option(
        600.0,
        "audio seconds per encoder transformer span (attends to all earlier "
        "audio); clips up to 10 min run in one span, like the official encode",
    )
    encode_kv_device_mib: float = option(
        640.0, "encoder keys/values kept on the GPU, MiB (≈20 min of audio); older ones go to pinned host RAM"
    )
    decode_chunk_frames: int = option(300, "code frames per decode chunk (state carries across, so seams are exact)")
    batch_audio_s: float = option(60.0, "padded audio seconds per batched encode call (bounds batch memory)")
    min_chunk_s: float = option(5.0, "out-of-memory retries halve the chunks down to this floor, seconds")
    cudnn_benchmark: bool = option(
        False, "let cuDNN time conv algorithms per new shape (measured: no faster, more memory)"
    )
    strict_fp32_encode: bool = option(
        True, "fp32 encodes run convolutions in full fp32, not TF32, so chunked codes reproduce"
    )
    max_batch_memory_fraction: float = option(0.9, "refuse jobs whose estimated peak exceeds this share of free memory")
    data_dir: str = option(
        "",
        "folder for stored results such as blind-test answers (empty: "
        "$XDG_DATA_HOME/codec-workbench, else ~/.local/share/codec-workbench)",
    )
    decode_dtype: str | None = option(
        None,
        "decoder precision (default: as --dtype); bfloat16 also runs on CPU, "
        "where encodes stay fp32; bf16 chunks that break are redone in fp32",
        choices=DTYPES,
    )
    compile_decoder: bool = option(
        False, "torch.compile the decoder in the background after loading (decodes stay eager until it is done)"
    )
    anchors: str = option(
        DEFAULT_ANCHORS,
        "reference codecs made from each clip beside the codec: comma-separated ids from "
        f"{', '.join(a.id for a in ANCHORS)}, 'all' or 'none'",
    )
    compare_model: str = option(
        "", "a second checkpoint (local directory or hub id) loaded beside --model on the same device (empty: none)"
    )
    compare_dtype: str | None = option(None, "the second checkpoint's precision (default: as --dtype)", choices=DTYPES)
    compare_decode_dtype: str | None = option(
        None, "the second checkpoint's decoder precision (default: as its dtype)", choices=DTYPES
    )
    live_sessions: int = option(2, "live sessions (microphone through the codec) at once; 0 turns live mode off")
    live_max_s: float = option(600.0, "longest live session, seconds (10 min); never more than --max-duration")
    live_graphs: bool = option(
        True, "on a GPU, capture each live session's per-frame encode and decode as CUDA graphs (off: eager steps)"
    )
    live_packet_frames: int = option(
        0,
        "frames a live session encodes and decodes together (1-8; each frame past the first adds 80 ms of "
        "latency; 0: auto, 4 on a CPU with a model past 64 MiB of weights (one pass over them per 320 ms), "
        "else 1; docs/live.md)",
    )
    decode_streams: int = option(
        64,
        "code streams decoded at once (engine.stream_decoder(), /decode/ws, serve-decode); on a GPU they share "
        "one batched step and are admitted while it keeps real time; 0 turns stream decoding off",
    )
    client_decode_streams: int = option(4, "decode streams (/decode/ws sockets) one client may hold at once")
    live_winograd: int = option(
        6,
        "on a CPU, a live session's decoder runs its kernel-7 convolutions as Winograd F(m, 7), m outputs per "
        "tile: 6 (fastest), 4 or 2 (closer to the fp32 decode), 0 the direct convolution (docs/live.md gives the SNR)",
    )
    mos_windows: int = option(
        4, "DistillMOS windows of 7.68 s per clip for the verdict (bounds its time and memory at any length)"
    )
    speaker_model: str = option(
        "ge2e",
        "speaker model behind speaker similarity: 'ge2e' (resemblyzer, offline; votes in the verdict) or a "
        "WavLM x-vector checkpoint, local directory or hub id (its own SIM-WavLM column, no verdict bounds)",
    )
    asr: str = option(
        "",
        "speech recogniser behind dWER: empty (no dWER), 'pocketsphinx' (US English, offline) or a Whisper "
        "checkpoint, local directory or hub id",
    )
    asr_language: str = option(
        "", "the clips' language for dWER (en, zh, ...); empty: not stated (Whisper detects it, pocketsphinx skips)"
    )
    ladder_max_audio_s: float = option(
        3600.0, "audio one codebook-ladder request may decode: levels x clip seconds (16 levels of 10 min: 9600)"
    )
    abx_max_region_s: float = option(60.0, "longest blind-test region, seconds (listeners compare short excerpts)")
    abx_session_ttl_s: float = option(3600.0, "a blind test with no answer for this long expires, seconds")
    share_ttl_s: float = option(
        604800.0, "a shared listening test expires this long after it is made, seconds (7 days)"
    )
    database_url: str = option(
        "",
        "shared listening tests on a PostgreSQL server (postgresql://...); empty: the SQLite file in the data folder",
    )

    def __post_init__(self) -> None:
        """Check values that do not need the model; raise SettingsError saying what to change."""
        if not self.data_dir:  # the default depends on the user's environment, so it is filled in here
            object.__setattr__(self, "data_dir", default_data_dir())
        if self.device == "auto" or not _DEVICE_RE.match(self.device):
            raise SettingsError(f"Device {self.device!r} is not supported: use 'cpu' or 'cuda:N' (e.g. cuda:0).")
        if self.dtype not in DTYPES:
            raise SettingsError(f"dtype {self.dtype!r} is not supported: use one of {', '.join(DTYPES)}.")
        if self.dtype == "bfloat16" and not self.is_cuda:
            raise SettingsError(
                "bfloat16 runs only on a GPU with native bf16 support; on CPU use --dtype float32 "
                "(--decode-dtype bfloat16 runs only the decoder in bf16, guarded)."
            )
        if self.decode_dtype is not None and self.decode_dtype not in DTYPES:
            raise SettingsError(f"decode dtype {self.decode_dtype!r} is not supported: use one of {', '.join(DTYPES)}.")
        for name in (*_POSITIVE, *_SHARES, "encode_kv_device_mib"):
            if not math.isfinite(getattr(self, name)):  # nan passes every comparison below
                raise SettingsError(f"{name} must be a finite number, not {getattr(self, name)!r}.")
        for name in _POSITIVE:
            if getattr(self, name) <= 0:
                raise SettingsError(f"{name} must be positive.")
        for name in _SHARES:
            if not 0.0 < getattr(self, name) <= 1.0:
                raise SettingsError(f"{name} must be in (0, 1], e.g. 0.8.")
        if self.decode_chunk_frames < 1:
            raise SettingsError("decode_chunk_frames must be at least 1.")
        if self.decode_streams < 0 or self.client_decode_streams < 1:
            raise SettingsError("decode_streams must be zero (off) or more, and client_decode_streams one or more.")
        if self.live_sessions < 0:
            raise SettingsError("live_sessions must be zero (live mode off) or more.")
        if self.live_winograd not in LIVE_WINOGRAD_TILES:
            raise SettingsError(
                f"live_winograd must be one of {', '.join(map(str, LIVE_WINOGRAD_TILES))} "
                f"(outputs per Winograd tile; 0 for the direct convolution), not {self.live_winograd}."
            )
        if not 0 <= self.live_packet_frames <= MAX_LIVE_PACKET:
            raise SettingsError(
                f"live_packet_frames must be 1 to {MAX_LIVE_PACKET} frames of 80 ms (or 0 for auto), "
                f"not {self.live_packet_frames}."
            )
        if self.mos_windows < 1:
            raise SettingsError("mos_windows must be at least 1.")
        if self.encode_kv_device_mib < 0:
            raise SettingsError("encode_kv_device_mib must be zero or more.")
        parse_anchors(self.anchors)  # SettingsError naming the valid ids
        for name in ("compare_dtype", "compare_decode_dtype"):
            if getattr(self, name) not in (None, *DTYPES):
                raise SettingsError(f"{name} {getattr(self, name)!r} is not supported: use one of {', '.join(DTYPES)}.")
        if self.compare_dtype == "bfloat16" and not self.is_cuda:
            raise SettingsError(
                "--compare-dtype bfloat16 runs only on a GPU; on CPU use --compare-decode-dtype bfloat16 "
                "(the second checkpoint's decoder in bf16, guarded) to hear bf16 against fp32."
            )

    @property
    def max_file_bytes(self) -> int:
        return int(self.max_file_mb * MIB)

    @property
    def is_cuda(self) -> bool:
        return self.device.startswith("cuda")

    def audio_limits(self) -> AudioLimits:
        """The limits that guard every way audio comes in (files, arrays, URLs, batches)."""
        return AudioLimits(
            max_duration_s=self.max_duration_s,
            max_file_bytes=self.max_file_bytes,
            max_peak=10 ** (self.max_peak_dbfs / 20),
        )

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def default_temp_root() -> Path:
    """Where request folders go when no ``--temp-dir`` is given: a folder in the system's temp folder."""
    return Path(tempfile.gettempdir()) / TEMP_FOLDER


@dataclass(frozen=True)
class ServiceOptions:
    """Where the web service listens and writes: read by the web UI (``webui.options.WebOptions``
    extends this table) and by ``python -m core doctor`` (which checks that port and folder)."""

    host: str = option(DEFAULT_HOST, "interface the web UI binds (0.0.0.0: every interface)")
    port: int = option(DEFAULT_PORT, f"TCP port of the web UI (0: the first free one from {DEFAULT_PORT} up)")
    temp_dir: str = option("", f"where per-request files go (default: <system temp>/{TEMP_FOLDER})")

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise SettingsError(f"port {self.port} is not a TCP port: use 1..65535 (or 0 for any free one).")

    @property
    def temp_root(self) -> Path:
        """The temp folder: ``temp_dir`` when given, else :func:`default_temp_root`."""
        return Path(self.temp_dir) if self.temp_dir else default_temp_root()


ENGINE_GROUP = "engine"  # the title of the engine's flags in every --help (after the command's own)
ENGINE_GROUP_HELP = "model and engine settings, the same for every command (a flag wins over its CODEC_* variable)"


def add_settings_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the engine's flags to an argument parser (defaults come from the environment), as their own
    group: ``--help`` shows the command's options first and these after."""
    options.add_arguments(parser.add_argument_group(ENGINE_GROUP, ENGINE_GROUP_HELP), Settings)


def settings_from_args(args: argparse.Namespace | None = None, env: Mapping[str, str] | None = None) -> Settings:
    """Flags win over environment variables, which win over defaults."""
    env = os.environ if env is None else env
    given = options.values(Settings, args, env)
    if "device" not in given:
        given["device"] = default_device()
    if not given.get("data_dir"):
        given["data_dir"] = default_data_dir(env)
    return Settings(**given)
