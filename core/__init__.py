"""Codec Workbench engine for the Qwen3-TTS-Tokenizer-12Hz codec.

One module per concern; docs/core.md has the map (where things live). In short: ``codec`` (the
codec's facts and rules), ``settings``, ``engine`` (the model owner: lifecycle, lock, jobs),
``planner`` (chunk plans and memory estimates), ``encoding`` / ``decoding`` (the encode and decode
paths on long audio), ``kv_cache`` and ``kernels`` (what they run on), ``audio`` (reading any audio
file; ``audio_readers``, ``audio_blocks``), ``tokens`` (the token file format), ``readiness``,
``memory``, ``weights``, ``checkpoints``, ``analysis``, ``versions``, ``cli``; for the listening lab
``ladder`` (decode with the first k codebooks), ``timeline``, ``token_usage``, ``loudness``.
Importing this package does no work; the UI lives in ``webui`` and is never imported here.
"""

__version__ = "0.2.0"
