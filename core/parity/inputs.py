"""What a parity check reads: the codes another implementation decoded (a token file, ``.npy``, or
JSON frames × 16) and the WAV it made from them. Sizes are checked before anything is read in full
(a 30-minute clip has 22,500 frames; a WAV of it at 48 kHz stereo is 660 MB as float32), and every
problem is one sentence that says what to do."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from core import tokens
from core.audio.blocks import dbfs
from core.audio.files import resample
from core.codec import CODEBOOK_SIZE, NUM_CODEBOOKS, SAMPLE_RATE, SAMPLES_PER_FRAME, check_duration, num_frames
from core.errors import AudioInputError, TokenFileError
from core.parity.words import Note
from core.settings import AudioLimits
from core.units import MIB, minutes

PADDING_CODE = -1  # what the official code uses for padding; code 0 is a valid code
MAX_JSON_BYTES = 64 * MIB  # 30 min of codes as JSON text is about 2 MB
JSON_KEYS = ("codes", "audio_codes", "tokens")  # a JSON object holding the frames under one of these
FAR_OFF = 2.0  # a WAV more than this many times longer or shorter than the codes imply is refused
FAR_OFF_MIN_S = 1.0  # ... when the lengths also differ by more than this many seconds
CODE_SUFFIXES = (".npz", ".npy", ".json")


@dataclass(frozen=True)
class Codes:
    codes: np.ndarray  # (frames, 16) int64, values 0..2047
    original_samples: int | None  # the clip's length from a token file; None: frames × 1920
    kind: str  # "token file", "npy" or "json"
    notes: tuple[Note, ...] = ()  # what was done to read them (a transposed array, a batch of one)
    model_source: str = ""  # the model a token file says made them; "" for .npy and JSON

    @property
    def frames(self) -> int:
        return int(self.codes.shape[0])

    @property
    def decoded_samples(self) -> int:
        """Samples a decoder makes from these codes before any trim: frames × 1920."""
        return self.frames * SAMPLES_PER_FRAME


@dataclass(frozen=True)
class TheirAudio:
    samples: np.ndarray  # float32 mono at ``compared_at_hz``, non-finite samples set to 0
    sample_rate: int  # the file's own rate
    channels: int
    subtype: str  # soundfile's name of the sample format, e.g. PCM_16, FLOAT
    nonfinite: int  # NaN or infinite samples in the file (before they were zeroed)
    first_nonfinite_s: float | None
    notes: tuple[Note, ...] = ()  # what was done to compare it (resampled, downmixed)
    compared_at_hz: int = SAMPLE_RATE  # the rate ``samples`` are at: the reference decoder's

    @property
    def resampled(self) -> bool:
        return self.sample_rate != self.compared_at_hz


def load_codes(path, max_duration_s: float) -> Codes:
    """Codes from a token file (``.npz``), a NumPy ``.npy`` or a JSON file of frames × 16 (or 16 ×
    frames, or a batch of one); TokenFileError for anything else, before decoding anything."""
    path = Path(path)
    if not path.is_file():
        raise TokenFileError(
            f"{path} does not exist or is not a file. Give the codes the other implementation decoded."
        )
    suffix = path.suffix.lower()
    if suffix == ".npz":
        token_file = tokens.load_tokens(path, max_duration_s=max_duration_s)
        codes = np.asarray(token_file.codes, dtype=np.int64)
        return Codes(codes, token_file.original_samples, "token file", model_source=token_file.model_source)
    if suffix == ".npy":
        return _checked(_read_npy(path, max_duration_s), path, "npy", max_duration_s)
    if suffix == ".json":
        return _checked(_read_json(path), path, "json", max_duration_s)
    raise TokenFileError(
        f"{path.name}: codes must be a token file (.npz), a NumPy array (.npy) or JSON (.json) of frames × "
        f"{NUM_CODEBOOKS}, not '{suffix or 'no extension'}'."
    )


def _max_frames(max_duration_s: float) -> int:
    return num_frames(math.floor(max_duration_s * SAMPLE_RATE))


def _read_npy(path: Path, max_duration_s: float) -> np.ndarray:
    """The array of a ``.npy``, its header read first: no pickles, nothing larger than the limit allows."""
    with open(path, "rb") as f:
        try:
            version = np.lib.format.read_magic(f)
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, _fortran, dtype = read(f)
        except (ValueError, TypeError, SyntaxError) as e:
            raise TokenFileError(f"{path.name} is not a NumPy .npy file ({e}). Save the codes with numpy.save.") from e
        data_bytes = path.stat().st_size - f.tell()
    if dtype.hasobject:
        raise TokenFileError(f"{path.name} holds Python objects; save the codes as an integer array (numpy.save).")
    count = int(np.prod(shape)) if shape else 1
    if count > _max_frames(max_duration_s) * NUM_CODEBOOKS:
        raise TokenFileError(
            f"{path.name} holds {count:,} values, more than {minutes(max_duration_s)} of codes "
            "(--max-duration / CODEC_MAX_DURATION_S). Check it with a shorter clip."
        )
    if count * dtype.itemsize != data_bytes:  # a header that lies about the shape or the type
        raise TokenFileError(
            f"{path.name}'s header declares {tuple(shape)} values of {dtype} ({count * dtype.itemsize:,} bytes), "
            f"but the file holds {data_bytes:,} bytes after it: it is damaged or was crafted. "
            "Save the codes again with numpy.save."
        )
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        raise TokenFileError(
            f"{path.name} cannot be read as a NumPy array ({e}). Save the codes with numpy.save."
        ) from e


def _read_json(path: Path):
    size = path.stat().st_size
    if size > MAX_JSON_BYTES:
        raise TokenFileError(
            f"{path.name} is {size / MIB:.0f} MiB, over the {MAX_JSON_BYTES / MIB:.0f} MiB JSON limit."
        )
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise TokenFileError(f"{path.name} is not valid JSON ({e}).") from e
    except RecursionError as e:  # lists nested far deeper than frames × codebooks ever are
        raise TokenFileError(
            f"{path.name} nests its lists too deep to be codes: codes are a list of frames, each a list of "
            f"{NUM_CODEBOOKS} integers."
        ) from e
    if isinstance(value, dict):
        key = next((k for k in JSON_KEYS if k in value), None)
        if key is None:
            raise TokenFileError(
                f"{path.name}: a JSON object must hold the frames under one of {', '.join(JSON_KEYS)}."
            )
        value = value[key]
    try:
        return np.asarray(value)
    except (ValueError, RecursionError) as e:  # ragged lists, or nested deeper than NumPy's dimensions
        raise TokenFileError(f"{path.name}: every frame must hold {NUM_CODEBOOKS} codes ({e}).") from e


def _checked(array: np.ndarray, path: Path, kind: str, max_duration_s: float) -> Codes:
    notes: list[Note] = []
    if array.ndim == 3 and array.shape[0] == 1:
        array = array[0]
        notes.append(Note("codes_batch"))
    if array.ndim == 2 and array.shape[1] != NUM_CODEBOOKS and array.shape[0] == NUM_CODEBOOKS:
        array = array.T
        notes.append(Note("codes_transposed", {"codebooks": NUM_CODEBOOKS}))
    if array.ndim != 2 or array.shape[1] != NUM_CODEBOOKS:
        raise TokenFileError(
            f"{path.name} has shape {tuple(array.shape)}; codes must be frames × {NUM_CODEBOOKS} "
            f"(one row per 80 ms frame, one column per codebook)."
        )
    if array.shape[0] == 0:
        raise TokenFileError(f"{path.name} holds no frames.")
    if array.dtype.kind == "f":
        if not np.isfinite(array).all() or not (array == np.round(array)).all():
            raise TokenFileError(
                f"{path.name} holds numbers that are not whole: codes are integers 0..{CODEBOOK_SIZE - 1}."
            )
        array = array.astype(np.int64)
    elif array.dtype.kind not in "iu":
        raise TokenFileError(f"{path.name} holds {array.dtype} values; codes are integers 0..{CODEBOOK_SIZE - 1}.")
    check_duration([array.shape[0]], max_duration_s)
    low, high = int(array.min()), int(array.max())
    if low == PADDING_CODE:
        frame = int(np.argmax((array == PADDING_CODE).any(axis=1)))
        raise TokenFileError(
            f"{path.name} contains {PADDING_CODE} from frame {frame} on: that is the padding value, not a code. "
            "Cut the padded frames off first (code 0 is a valid code; padding is -1)."
        )
    if low < 0 or high >= CODEBOOK_SIZE:
        raise TokenFileError(
            f"{path.name} holds values {low}..{high}; codes are 0..{CODEBOOK_SIZE - 1}. "
            "Are these the 12 Hz tokenizer's codes (16 codebooks × 2048)?"
        )
    return Codes(array.astype(np.int64), None, kind, tuple(notes))


def load_their_wav(path, limits: AudioLimits, codes: Codes, rate_hz: int = SAMPLE_RATE) -> TheirAudio:
    """The WAV another implementation decoded from ``codes``: checked against the limits and against the
    length the codes imply before it is read, then mono at ``rate_hz`` (the reference decoder's: 48 kHz for
    a 48 kHz port; resampled and downmixed, said so).
    NaN and infinite samples are counted (a broken low-precision decoder makes them), not refused."""
    path = Path(path)
    if not path.is_file():
        raise AudioInputError(f"{path} does not exist or is not a file. Give the WAV the other implementation made.")
    size = path.stat().st_size
    if size > limits.max_file_bytes:
        raise AudioInputError(
            f"'{path.name}' is {size / MIB:.0f} MiB, over the {limits.max_file_bytes / MIB:.0f} MiB limit (--max-file-mb)."
        )
    try:
        info = sf.info(str(path))
    except (RuntimeError, sf.LibsndfileError) as e:
        raise AudioInputError(f"'{path.name}' is not a WAV (or other file libsndfile reads): {e}.") from e
    seconds = info.frames / info.samplerate
    if seconds > limits.max_duration_s:
        raise AudioInputError(
            f"'{path.name}' lasts {minutes(seconds)}, over the {minutes(limits.max_duration_s)} limit (--max-duration)."
        )
    expected_s = codes.decoded_samples / SAMPLE_RATE
    far = seconds > FAR_OFF * expected_s or seconds < expected_s / FAR_OFF
    if far and abs(seconds - expected_s) > FAR_OFF_MIN_S:
        raise AudioInputError(
            f"'{path.name}' lasts {seconds:.2f} s, but the codes ({codes.frames} frames) decode to {expected_s:.2f} s: "
            "it was not made from these codes. Give the WAV the other implementation decoded from this file."
        )
    data, rate = sf.read(str(path), dtype="float32", always_2d=True)
    notes: list[Note] = []
    finite = np.isfinite(data)
    nonfinite = int(data.size - finite.sum())
    first = None
    if nonfinite:
        first = float(np.argmin(finite.all(axis=1)) / rate)
        data = np.where(finite, data, 0.0).astype(np.float32)
    loudest = float(np.abs(data).max()) if data.size else 0.0
    if loudest > limits.max_peak:  # the peak rule of every way audio comes in (core.audio.blocks)
        at = float(np.argmax(np.abs(data).max(axis=1)) / rate)
        raise AudioInputError(
            f"'{path.name}' is far over full scale: a sample of {loudest:.3g} at {at:.2f} s is {dbfs(loudest):+.0f} "
            f"dBFS, over the {dbfs(limits.max_peak):+.0f} dBFS limit (1.0 is full scale; --max-peak-dbfs). The other "
            "decoder wrote it with the wrong scale or is broken: no comparison of such samples means anything."
        )
    if data.shape[1] > 1:
        same = all(np.array_equal(data[:, 0], data[:, c]) for c in range(1, data.shape[1]))
        notes.append(Note("wav_channels_same" if same else "wav_channels_differ", {"channels": data.shape[1]}))
        mono = data[:, 0] if same else data.mean(axis=1)
    else:
        mono = data[:, 0]
    if rate != rate_hz:
        notes.append(Note("wav_resampled", {"rate": rate, "target": rate_hz}))
        mono = resample(mono, rate, rate_hz)
    return TheirAudio(
        np.ascontiguousarray(mono, dtype=np.float32),
        rate,
        data.shape[1],
        info.subtype,
        nonfinite,
        first,
        tuple(notes),
        rate_hz,
    )
