"""Codec Workbench: the engine for the Qwen3-TTS-Tokenizer-12Hz codec, as a library.

    from core import Engine, Settings, load_audio, write_wav
    engine = Engine(Settings(model="checkpoints/tiny"))
    engine.load()  # False, with engine.error saying why, when the weights cannot be loaded
    trip = engine.roundtrip(load_audio("speech.wav"))
    write_wav("speech.decoded.wav", trip.decoded.samples)

The names above and the others of ``__all__`` are imported on first use (module ``__getattr__``):
``import core`` and ``python -m core --help`` load none of them. What it offers:

- ``core.model.engine.Engine``: the one object that owns the model (load, readiness, encode,
  decode, round trip, memory estimates; one lock around all model work).
- ``core.model.stream_decoder.StreamDecoder`` (``engine.stream_decoder()``): code packets in, the
  audio they complete out, equal to one decode of all the codes.
- ``core.settings.Settings``: its options, from flags and ``CODEC_*`` variables
  (``core.settings.settings_from_args``); ``Settings.audio_limits()`` guards every way audio comes in.
- ``core.audio.files.load_audio`` / ``core.audio.files.write_wav``: any common audio file to
  24 kHz mono float32 with its facts, and back to an exact WAV.
- ``core.tokens``: the token file (``core.tokens.save_tokens``, ``core.tokens.load_tokens``).
- ``core.codec``: the codec's facts and its rule for valid codes.
- The command line: ``python -m core`` (``codec`` when installed), assembled in ``core.cli.main``.

Where everything lives: docs/core.md. Importing this package does no work (no model load, no
CUDA init); the web UI lives in ``webui`` and is never imported here.
"""

__version__ = "0.2.0"  # the one version source: pyproject.toml, token files, /health and the doctor read it

_PUBLIC = {  # name -> the module that defines it (imported on first use)
    "Engine": "core.model.engine",
    "Settings": "core.settings",
    "AudioLimits": "core.settings",
    "settings_from_args": "core.settings",
    "Audio": "core.audio.files",
    "load_audio": "core.audio.files",
    "audio_from_array": "core.audio.files",
    "write_wav": "core.audio.files",
    "TokenFile": "core.tokens",
    "save_tokens": "core.tokens",
    "load_tokens": "core.tokens",
    "CodecError": "core.errors",
    "SAMPLE_RATE": "core.codec",
    "FRAME_RATE": "core.codec",
    "NUM_CODEBOOKS": "core.codec",
    "compare": "core.analysis.metrics",
    "build_tiny_checkpoint": "core.model.checkpoints",
    "StreamDecoder": "core.model.stream_decoder",
}
__all__ = ["__version__", *_PUBLIC]


def __getattr__(name: str):
    """``core.Engine`` and the other public names, imported from their module on first use."""
    if name not in _PUBLIC:
        raise AttributeError(f"module 'core' has no attribute {name!r}; its public names: {', '.join(_PUBLIC)}")
    import importlib

    value = getattr(importlib.import_module(_PUBLIC[name]), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})
