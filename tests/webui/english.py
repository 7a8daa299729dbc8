"""Finding English left on a page meant for another language: runs of two or more English words,
once names (codecs, metrics, standards, packages), units, paths and file names are taken out."""

from __future__ import annotations

import re

_ALLOWED = re.compile(  # names, units and file names may stay as they are
    r"(?:/[\w.-]+)+/?|[\w.-]+\.(?:wav|npz|png|zip|html|csv|json)\b|Qwen3-TTS-Tokenizer(?:-12Hz)?|DistillMOS|PESQ-WB|PESQ-NB|PESQ|"
    r"STOI|SI-SDR|ITU-[RT] [\w.]+|LUFS|dBFS|kbit/s|bit/s|GiB|MiB|kHz|Hz|dB|CPU|GPU|CUDA|float32|bfloat16|bf16|"
    r"LP \d|AMR-NB|Opus|MP3|WAV|FLAC|OGG|Vorbis|M4A|AAC|WebM|Codec Workbench|Gradio|JSON|HTML|API|RMS|SNR|\bms\b|\bs\b"
)
_SENTENCE = re.compile(r"\b[A-Za-z]{2,}\b(?:[ ,;:']+\b[A-Za-z]{2,}\b)+")  # two or more English words in a row


def english_sentences(text: str) -> list[str]:
    """Runs of English words left once names, units and file names are taken out."""
    return _SENTENCE.findall(_ALLOWED.sub(" ", text))
