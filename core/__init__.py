"""Codec Workbench: the engine for the Qwen3-TTS-Tokenizer-12Hz codec, as a library.

What it offers:

- ``core.model.engine.Engine``: the one object that owns the model (load, readiness, encode,
  decode, round trip, memory estimates; one lock around all model work).
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
