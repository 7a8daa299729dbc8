"""One run of every check: gather the facts, judge them, return a :class:`Report`.

Used by ``python -m core doctor`` and by the page's *Diagnose* button (which passes the
engine it serves with, and its own temp folder and port)."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

from core.analysis.judges import Judges
from core.doctor import gather, gpu, host, judges, needs, tones
from core.doctor.findings import Finding, Report
from core.errors import CodecError
from core.settings import DEFAULT_HOST, DEFAULT_PORT, default_temp_root
from core.versions import installed_versions

logger = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[2]  # requirements*.txt, supervisord.conf and logs/ live here
APP_REQUIREMENTS = ("requirements.txt", "requirements-judging.txt", "requirements-judging-nodeps.txt")  # make run's
JOB_LENGTHS_S = (("30 s", 30.0), ("10 min", 600.0), ("30 min", 1800.0))  # (label, seconds) for the memory check


def data_dir_of(settings) -> Path:
    """The folder for stored results: ``Settings.data_dir`` (``--data-dir`` / CODEC_DATA_DIR / the XDG default)."""
    return Path(settings.data_dir)


@dataclass(frozen=True)
class DoctorOptions:
    host: str = DEFAULT_HOST  # where the UI listens (core.settings.ServiceOptions, as the web UI reads it)
    port: int = DEFAULT_PORT  # its port
    temp_dir: Path = field(default_factory=default_temp_root)  # its request folders
    data_dir: Path | None = None  # stored results; None: the engine's settings (data_dir_of)
    repo: Path = REPO  # requirements.txt, supervisord.conf, logs/
    temp_need_mib: float = 1024.0  # free space the temp folder needs: uploads and outputs of a few jobs
    data_need_mib: float = 100.0  # free space the data folder needs: SQLite stores
    job_lengths_s: tuple[tuple[str, float], ...] = JOB_LENGTHS_S  # lengths the memory check estimates
    precision_frames: int = 4  # code frames (0.32 s) decoded in each precision to advise one (cpu_decode)


def run_doctor(engine, options: DoctorOptions = DoctorOptions()) -> Report:
    """Every check, in the order a support engineer asks; ``engine`` may be loaded or not."""
    start = time.perf_counter()
    settings = engine.settings
    device, dtype = settings.device, settings.dtype
    data_dir = options.data_dir or data_dir_of(settings)
    smi_csv, smi_header, smi_error = gather.nvidia_smi()
    torch = gather.torch_facts()
    findings: list[Finding] = [
        _model(engine),
        gpu.check_driver(device, smi_csv, smi_error),
        gpu.check_torch(device, torch),
        gpu.check_same_gpu(device, smi_csv, torch),
        gpu.check_versions(device, smi_header, torch),
        gpu.check_placement(_named_tensors(engine), device, dtype),
        gpu.check_memory(_estimates(engine, options.job_lengths_s), settings.max_duration_s),
        _tones(engine),
        host.check_cpu_decode(
            device,
            settings.decode_dtype or dtype,
            gather.cpu()[0],
            gather.decode_timings(engine, options.precision_frames),
            options.precision_frames,
        ),
        host.check_supervisor(
            *gather.supervisor(options.repo / "supervisord.conf", host.PROGRAM),
            gather.log_tail(options.repo / "logs" / "supervisord.log"),
            gather.log_tail(options.repo / "logs" / f"{host.PROGRAM}.log"),
        ),
        needs.check_audio_decoders(*gather.audio_decoders(needs.NEEDED_DECODERS)),
        _packages([options.repo / name for name in APP_REQUIREMENTS]),
        host.check_port(options.host, options.port, *gather.port(options.host, options.port)),
        host.check_folder(
            "temp_dir",
            "Temp folder: space and write access",
            str(options.temp_dir),
            *gather.folder(options.temp_dir),
            options.temp_need_mib,
        ),
        host.check_folder(
            "data_dir",
            "Data folder: space and write access",
            str(data_dir),
            *gather.folder(data_dir),
            options.data_need_mib,
        ),
        needs.check_blind_test_store(*_blind_test_store(data_dir)),
        needs.check_shared_test_store(*_shared_test_store(settings, data_dir)),
        judges.check_judging_models(judges.try_judging_models(Judges.of(settings))),
    ]
    report = Report(tuple(findings), time.perf_counter() - start)
    logger.info("doctor: %s", report.counts())
    return report


def _model(engine):
    """The model check: the engine's load, or (not loaded: --no-model) a look at the files."""
    settings, state = engine.settings, getattr(engine.state, "value", str(engine.state))
    if state == "ready":
        info = engine.info()
        random_weights, rate = bool(info.get("random_weights")), info.get("output_rate_hz")
        return needs.check_model(settings.model, state, str(engine.model_path), None, random_weights, rate)
    if engine.error:
        return needs.check_model(settings.model, state, None, engine.error, False)
    path, error = gather.model_files(settings.model)
    from core.model.checkpoints import is_random_checkpoint

    random_weights = path is not None and is_random_checkpoint(Path(path))
    return needs.check_model(settings.model, state, path, error, random_weights, _config_rate(path))


def _config_rate(path: str | None) -> int | None:
    """config.json's ``output_sample_rate`` of a checkpoint not loaded (None when it does not say)."""
    import json

    try:
        rate = json.loads((Path(path) / "config.json").read_text()).get("output_sample_rate") if path else None
    except (OSError, ValueError, AttributeError):
        return None
    return int(rate) if isinstance(rate, int | float) and not isinstance(rate, bool) else None


def _blind_test_store(data_dir: Path) -> tuple[str, str | None]:
    from core.listening.abx_db import DB_NAME, store_problem

    return str(Path(data_dir) / DB_NAME), store_problem(data_dir)


def _shared_test_store(settings, data_dir: Path) -> tuple[str, str | None]:
    from core.listening.shared_test_db import Database, SharedTestDbError

    try:
        db = Database(data_dir, url=settings.database_url or None)
    except SharedTestDbError as e:
        return str(settings.database_url), str(e)
    return db.describe(), db.problem()


def _named_tensors(engine) -> list:
    try:
        model = engine.model
    except CodecError:
        return []
    return list(model.named_parameters()) + list(model.named_buffers())


def _estimates(engine, lengths: tuple[tuple[str, float], ...]) -> list[tuple[str, dict]]:
    out = []
    for label, seconds in lengths:
        try:
            e = engine.estimate("roundtrip", seconds=seconds)
        except CodecError:
            return []
        out.append(
            (
                label,
                {
                    "seconds": e.seconds,
                    "peak_mib": e.peak_mib,
                    "available_mib": e.available_mib,
                    "fits": e.fits,
                    "message": e.message,
                },
            )
        )
    return out


def _tones(engine):
    if not engine.ready:
        return tones.check_tones(None, None)
    return tones.check_tones(lambda x: engine.encode_array(x).codes, lambda codes: engine.decode(codes).samples)


def _packages(requirements: list[Path]):
    text = "\n".join(path.read_text(encoding="utf-8") for path in requirements if path.is_file())
    pins = host.parse_pins(text)
    return host.check_packages(pins, installed_versions(pins))
