"""Codec Workbench engine for the Qwen3-TTS-Tokenizer-12Hz codec.

One module per concern: ``settings`` (configuration), ``weights`` (finding and loading a
checkpoint), ``engine`` (the model owner: lifecycle, lock, jobs), ``readiness`` (the three-step
check), ``streaming`` (model calls on long audio), ``memory`` (VRAM and system figures),
``audio`` (reading any audio file), ``tokens`` (the token file format), ``analysis``
(spectrograms and metrics), ``checkpoints`` (random-weight test checkpoints), ``cli``.
Importing this package does no work; the UI lives in ``webui`` and is never imported here.
"""

__version__ = "0.1.0"
