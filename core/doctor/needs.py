"""What the app itself needs, checked so that its absence is a failure, never a skip: the model
(its files, and the load), the audio decoders inside PyAV, and the blind-test database. Pure
functions of the facts ``gather.py`` collects."""

from __future__ import annotations

from core.doctor.findings import FAIL, PASS, WARN, Finding, finding

MODEL_FIX = (
    "point --model / CODEC_MODEL at a checkpoint directory (config.json, preprocessor_config.json, "
    "*.safetensors); see docs/service.md. A random-weight test checkpoint: `python -m core build-checkpoint --tiny DIR`"
)
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
        return finding(name, title, FAIL, f"{source}: {error}", MODEL_FIX, facts)
    if path is None:
        return finding(name, title, FAIL, f"{source}: no checkpoint found", MODEL_FIX, facts)
    caveat = f"; its decoder writes {output_rate_hz / 1000:g} kHz" if output_rate_hz else ""
    caveat += "; random weights: a test checkpoint (no quality claims)" if random_weights else ""
    if state != "ready":
        return finding(
            name,
            title,
            WARN,
            f"files of a checkpoint found in {path}, not loaded (--no-model){caveat}",
            "run the doctor without --no-model to load it",
            facts,
        )
    return finding(name, title, PASS, f"loaded from {path}{caveat}", facts=facts)


def check_audio_decoders(av_version: str | None, decoders: dict[str, bool], error: str | None) -> Finding:
    """PyAV (FFmpeg's libraries inside its wheel) can decode MP3, M4A/AAC, Opus/WebM, Vorbis, FLAC.
    No system ffmpeg is needed: soundfile reads WAV/FLAC/OGG, PyAV the rest."""
    name, title = "audio_decoders", "Audio decoders (PyAV) for MP3, M4A/AAC, WebM/Opus"
    if av_version is None:
        return finding(
            name,
            title,
            FAIL,
            f"PyAV cannot be imported ({error}): MP3, M4A/AAC and WebM uploads cannot be read",
            ".venv/bin/pip install -r requirements.txt",
        )
    missing = [d for d, ok in decoders.items() if not ok]
    facts = {"av": av_version, "decoders": decoders}
    if missing:
        return finding(
            name,
            title,
            FAIL,
            f"PyAV {av_version} lacks the decoder(s) {', '.join(missing)}: files needing them cannot be read",
            "reinstall the pinned PyAV wheel: .venv/bin/pip install --force-reinstall -r requirements.txt",
            facts,
        )
    return finding(name, title, PASS, f"PyAV {av_version}: {', '.join(decoders)} decoders present", facts=facts)


def check_blind_test_store(path: str, problem: str | None) -> Finding:
    """The blind test's SQLite database opens and has its tables (a missing file is made on first use)."""
    name, title = "abx_store", "Blind-test database"
    if problem:
        return finding(
            name,
            title,
            FAIL,
            f"{path}: {problem}",
            "check the data folder (--data-dir / CODEC_DATA_DIR): free space, permissions, no other "
            "program holding the file; a damaged file is moved aside and recreated on the next blind test",
            database=path,
        )
    return finding(name, title, PASS, f"{path}: opens, tables present (or made on first use)", database=path)


def check_shared_test_store(where: str, problem: str | None) -> Finding:
    """The shared tests' database (SQLite file or PostgreSQL server) opens and is not damaged."""
    name, title = "shared_test_store", "Shared-tests database"
    if problem:
        return finding(
            name,
            title,
            FAIL,
            problem,
            "check the data folder (--data-dir) or CODEC_DATABASE_URL: free space, permissions, the server "
            "running; a damaged SQLite file is moved aside and recreated on the next shared-test call",
            database=where,
        )
    return finding(name, title, PASS, f"{where}: opens (tables made on first use)", database=where)
