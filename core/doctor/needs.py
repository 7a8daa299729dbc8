"""What the app itself needs, checked so that its absence is a failure, never a skip: the model
(its files, and the load), the audio decoders inside PyAV, and the blind-test database. Pure
functions of the facts ``gather.py`` collects."""

from __future__ import annotations

from core.doctor.findings import FAIL, PASS, WARN, Finding, finding
from core.doctor.words import Said, said

MODEL_FIX = said("fix_model")
NEEDED_DECODERS = ("mp3", "aac", "opus", "vorbis", "flac", "pcm_s16le")  # what the accepted formats decode with


def check_model(
    source: str,
    state: str,
    path: str | None,
    error: str | None,
    random_weights: bool,
    output_rate_hz: int | None = None,
) -> Finding:
    """The configured model is there and loads, and the rate its decoder writes (``output_rate_hz``: the
    loaded engine's, or config.json's). ``state``: the engine's ("ready", "failed", "unloaded" when the
    doctor was told not to load it: then ``path``/``error`` come from a look at the files alone)."""
    name, title = "model", "Model weights present and loaded"
    facts = {
        "source": source,
        "state": state,
        "model_dir": path,
        "random_weights": random_weights,
        "output_rate_hz": output_rate_hz,
    }
    if error:
        return finding(name, title, FAIL, said("model_error", source=source, error=error), MODEL_FIX, facts)
    if path is None:
        return finding(name, title, FAIL, said("model_missing", source=source), MODEL_FIX, facts)
    caveat: tuple[Said, ...] = (said("model_rate", khz=output_rate_hz / 1000),) if output_rate_hz else ()
    caveat += (said("model_random"),) if random_weights else ()
    if state != "ready":
        not_loaded = (said("model_not_loaded", place=path), *caveat)
        return finding(name, title, WARN, not_loaded, said("fix_load_model"), facts)
    return finding(name, title, PASS, (said("model_loaded", place=path), *caveat), facts=facts)


def check_audio_decoders(av_version: str | None, decoders: dict[str, bool], error: str | None) -> Finding:
    """PyAV (FFmpeg's libraries inside its wheel) can decode MP3, M4A/AAC, Opus/WebM, Vorbis, FLAC.
    No system ffmpeg is needed: soundfile reads WAV/FLAC/OGG, PyAV the rest."""
    name, title = "audio_decoders", "Audio decoders (PyAV) for MP3, M4A/AAC, WebM/Opus"
    if av_version is None:
        return finding(
            name,
            title,
            FAIL,
            said("av_missing", error=error),
            said("fix_requirements"),
        )
    missing = [d for d, ok in decoders.items() if not ok]
    facts = {"av": av_version, "decoders": decoders}
    if missing:
        return finding(
            name,
            title,
            FAIL,
            said("av_lacks", version=av_version, missing=", ".join(missing)),
            said("fix_av"),
            facts,
        )
    return finding(name, title, PASS, said("av_ok", version=av_version, decoders=", ".join(decoders)), facts=facts)


def check_blind_test_store(path: str, problem: str | None) -> Finding:
    """The blind test's SQLite database opens and has its tables (a missing file is made on first use)."""
    name, title = "abx_store", "Blind-test database"
    if problem:
        return finding(
            name,
            title,
            FAIL,
            said("store_problem", place=path, problem=problem),
            said("fix_abx_store"),
            database=path,
        )
    return finding(name, title, PASS, said("abx_store_ok", place=path), database=path)


def check_shared_test_store(where: str, problem: str | None) -> Finding:
    """The shared tests' database (SQLite file or PostgreSQL server) opens and is not damaged."""
    name, title = "shared_test_store", "Shared-tests database"
    if problem:
        return finding(
            name,
            title,
            FAIL,
            said("raw", text=problem),
            said("fix_shared_store"),
            database=where,
        )
    return finding(name, title, PASS, said("shared_store_ok", place=where), database=where)
