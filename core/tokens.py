"""The token file: codes of one clip plus what is needed to decode and trust them.

A token file is a NumPy ``.npz`` archive (a zip; never a pickle) holding two arrays:

- ``codes``: int16, shape (frames, 16), each value a codebook index in 0..2047;
- ``metadata``: a 0-d unicode array holding one JSON object, with the format name and
  version, the sample and frame rates, the number of input samples (decode trims to it),
  where the model came from, the package versions, the creation time and the SHA-256 of
  the codes (little-endian int16 bytes, row-major).

Loading checks everything before any of it is used, and every failure is a
``TokenFileError`` that names the file, says what is wrong and what to do. The cost of loading is
bounded before anything is unpacked: the arrays' headers are read first, and codes longer than the
duration limit (a 1 MB file can unpack to a gigabyte of codes) are refused from the header alone,
so every reader must say which limit applies (``max_duration_s``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import zipfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from core.codec import (
    CODEBOOK_SIZE,
    FRAME_RATE,
    NUM_CODEBOOKS,
    SAMPLE_RATE,
    bitrate_bps,
    ceil_div,
    check_duration,
    code_bits,
    codes_problem,
    length_problem,
)
from core.errors import TokenFileError
from core.units import MIB
from core.versions import installed_versions

logger = logging.getLogger(__name__)

FORMAT_NAME = "codec-workbench-tokens"  # the "format" field of every token file
FORMAT_VERSION = 1  # bumped whenever a reader of the old version could misread the new one

TOKENS_PER_SECOND = FRAME_RATE * NUM_CODEBOOKS  # 200 codes/s
NOMINAL_BITRATE_BPS = bitrate_bps()  # 2200 bit/s
PCM16_BITRATE_BPS = SAMPLE_RATE * 16  # 384000 bit/s, 16-bit mono PCM at 24 kHz

MAX_FILE_BYTES = 256 * MIB  # 256 MiB; a 10-hour clip is about 10 MB, so this is generous
MAX_UNCOMPRESSED_BYTES = 1024 * MIB  # 1 GiB once unzipped; guards against zip bombs
MAX_METADATA_CHARS = 1_000_000  # the JSON metadata is a few hundred characters

CODES_KEY = "codes"  # array name inside the .npz
METADATA_KEY = "metadata"  # array name inside the .npz
PACKAGES = ("qwen-tts", "transformers", "torch", "codec-workbench")  # recorded in versions

_REQUIRED_METADATA = {  # field -> accepted JSON types
    "format": (str,),
    "format_version": (int,),
    "sample_rate": (int,),
    "frame_rate": (int, float),
    "original_samples": (int,),
    "model_source": (str,),
    "versions": (dict,),
    "created": (str,),
    "codes_sha256": (str,),
}


@dataclass(frozen=True, eq=False)
class TokenFile:
    codes: np.ndarray  # (frames, 16) int16, values 0..2047, read-only
    sample_rate: int  # Hz of the audio the codes encode: always 24000
    frame_rate: float  # frames/s: always 12.5
    original_samples: int  # samples of the 24 kHz input before padding to whole frames
    model_source: str  # hub id or directory of the model that made the codes
    versions: dict = field(default_factory=dict)  # package -> version string (or None)
    created: str = ""  # ISO-8601 UTC time the codes were made
    decoder_rate_hz: int | None = (
        None  # output rate of the decoder beside the encoder that made them (None: older file)
    )

    @property
    def frames(self) -> int:
        return int(self.codes.shape[0])

    @property
    def duration_s(self) -> float:
        """Length of the original audio (decode output is trimmed to it)."""
        return self.original_samples / self.sample_rate

    @property
    def bitrate_bps(self) -> float:
        """Bits of codes per second of audio; a little above 2200 for short clips, because
        the last frame is padded."""
        return code_bits(self.frames) / self.duration_s

    def summary(self, original_pcm_bps: float | None = None) -> dict:
        """Numbers for display. ``original_pcm_bps``: bitrate of the user's original file
        as PCM (e.g. 44100 * 16 * 2 for CD stereo), for a second compression ratio."""
        info = {
            "frames": self.frames,
            "codebooks": NUM_CODEBOOKS,
            "frame_rate": self.frame_rate,
            "tokens_per_second": TOKENS_PER_SECOND,
            "bitrate_bps": self.bitrate_bps,
            "nominal_bitrate_bps": NOMINAL_BITRATE_BPS,
            "duration_s": self.duration_s,
            "compression_vs_pcm24k": PCM16_BITRATE_BPS / self.bitrate_bps,
        }
        if original_pcm_bps is not None:
            info["compression_vs_original"] = original_pcm_bps / self.bitrate_bps
        return info

    def __eq__(self, other) -> bool:
        if not isinstance(other, TokenFile):
            return NotImplemented
        return np.array_equal(self.codes, other.codes) and self._metadata() == other._metadata()

    def _metadata(self) -> dict:
        return {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "sample_rate": self.sample_rate,
            "frame_rate": self.frame_rate,
            "original_samples": self.original_samples,
            "num_codebooks": NUM_CODEBOOKS,
            "codebook_size": CODEBOOK_SIZE,
            "model_source": self.model_source,
            "versions": dict(self.versions),
            "created": self.created,
        } | ({} if self.decoder_rate_hz is None else {"decoder_rate_hz": self.decoder_rate_hz})


def codes_summary(frames: int) -> dict:
    """Nominal numbers for ``frames`` frames of codes (no file needed)."""
    bits = code_bits(frames)
    return {
        "frames": frames,
        "codebooks": NUM_CODEBOOKS,
        "tokens": frames * NUM_CODEBOOKS,
        "duration_s": frames / FRAME_RATE,
        "bits": bits,
        "bytes": ceil_div(bits, 8),
        "bitrate_bps": NOMINAL_BITRATE_BPS,
        "compression_vs_pcm24k": PCM16_BITRATE_BPS / NOMINAL_BITRATE_BPS,
    }


def package_versions() -> dict:
    """Installed versions of the packages that shape the codes; None where missing."""
    return installed_versions(PACKAGES)


def make_token_file(
    codes, original_samples: int, model_source: str, versions=None, decoder_rate_hz: int | None = None
) -> TokenFile:
    """Wrap fresh codes (array or tensor, (frames, 16)) as a TokenFile stamped with the current time,
    package versions (``versions`` entries override the detected ones) and the output rate of the
    checkpoint's decoder (``decoder_rate_hz``: a decode with another decoder says so).
    Raises ValueError for codes or lengths the codec cannot have produced."""
    if hasattr(codes, "detach"):  # a torch tensor, possibly on the GPU
        codes = codes.detach().cpu().numpy()
    codes = np.asarray(codes)
    problem = codes_problem(codes) or length_problem(codes.shape[0], original_samples)
    if problem:
        raise ValueError(f"cannot make a token file: {problem}")
    return TokenFile(
        codes=_frozen_int16(codes),
        sample_rate=SAMPLE_RATE,
        frame_rate=FRAME_RATE,
        original_samples=int(original_samples),
        model_source=str(model_source),
        versions={**package_versions(), **(versions or {})},
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        decoder_rate_hz=None if decoder_rate_hz is None else int(decoder_rate_hz),
    )


def save_tokens(token_file: TokenFile, path) -> Path:
    """Write ``token_file`` to ``path`` (conventionally ``*.npz``); never overwrites."""
    path = Path(path)
    metadata = {**token_file._metadata(), "codes_sha256": _checksum(token_file.codes)}
    try:
        handle = open(path, "xb")
    except FileExistsError as e:
        raise FileExistsError(f"{path} already exists; choose another name or delete it first") from e
    try:
        with handle:
            arrays: dict[str, Any] = {CODES_KEY: token_file.codes, METADATA_KEY: np.array(json.dumps(metadata))}
            np.savez_compressed(handle, **arrays)
    except BaseException:
        path.unlink(missing_ok=True)  # no half-written token files
        raise
    logger.info("saved %d frames of codes to %s", token_file.frames, path)
    return path


def load_tokens(path, *, max_duration_s: float | None = None) -> TokenFile:
    """Read and fully check a token file; raises TokenFileError naming what is wrong. Codes that
    decode to more than ``max_duration_s`` (the audio input's limit, ``Settings.max_duration_s``;
    None: that setting's default) are refused from the array header, before anything is unpacked."""
    path = Path(path)
    if max_duration_s is None:
        max_duration_s = default_max_duration_s()
    _check_container(path)
    codes, metadata = _read_arrays(path, max_duration_s)
    meta = _parse_metadata(path, metadata)
    problem = codes_problem(codes) or length_problem(codes.shape[0], meta["original_samples"])
    if problem:
        raise _bad(path, problem)
    codes = _frozen_int16(codes)
    if _checksum(codes) != meta["codes_sha256"]:
        raise _bad(path, "the codes do not match their checksum: the file was edited or corrupted")
    logger.info("loaded %d frames of codes from %s", codes.shape[0], path)
    return TokenFile(
        codes=codes,
        sample_rate=meta["sample_rate"],
        frame_rate=float(meta["frame_rate"]),
        original_samples=meta["original_samples"],
        model_source=meta["model_source"],
        versions=meta["versions"],
        created=meta["created"],
        decoder_rate_hz=meta.get("decoder_rate_hz"),
    )


def default_max_duration_s() -> float:
    """The duration limit when a reader names none: the default of ``Settings.max_duration_s``."""
    from core.settings import MAX_DURATION_S

    return MAX_DURATION_S


def _bad(path: Path, problem: str, advice: str = "") -> TokenFileError:
    advice = advice or "Load a .npz token file saved by Codec Workbench, or encode the audio again."
    return TokenFileError(f"{path.name}: {problem}. {advice}")


def _check_container(path: Path) -> None:
    """The file exists, is of sane size, and is a zip holding the two arrays."""
    try:
        size = path.stat().st_size
    except OSError as e:
        raise _bad(path, f"cannot read the file ({e.strerror})") from e
    if path.is_dir():
        raise _bad(path, "it is a folder, not a token file")
    if size == 0:
        raise _bad(path, "the file is empty")
    if size > MAX_FILE_BYTES:
        raise _bad(
            path, f"the file is {size / MIB:.0f} MiB, over the {MAX_FILE_BYTES // MIB} MiB limit for token files"
        )
    try:
        with zipfile.ZipFile(path) as archive:
            members = {info.filename: info.file_size for info in archive.infolist()}
    except (zipfile.BadZipFile, OSError) as e:
        raise _bad(path, f"not a token file: it is not a .npz (zip) archive{_sniff(path)}") from e
    names = {name.removesuffix(".npy") for name in members}
    missing = sorted({CODES_KEY, METADATA_KEY} - names)
    if missing:
        raise _bad(
            path,
            f"not a token file: the archive lacks {', '.join(missing)} "
            f"(it holds {', '.join(sorted(names)) or 'nothing'})",
        )
    if sum(members.values()) > MAX_UNCOMPRESSED_BYTES:
        raise _bad(path, f"the archive unpacks to over {MAX_UNCOMPRESSED_BYTES // MIB} MiB")


def _sniff(path: Path) -> str:
    """A hint at what the file really is, from its first bytes."""
    with open(path, "rb") as f:
        head = f.read(12)
    kinds = {
        b"RIFF": "a WAV file",
        b"fLaC": "a FLAC file",
        b"OggS": "an Ogg file",
        b"ID3": "an MP3 file",
        b"\x93NUMPY": "a single .npy array",
    }
    for magic, kind in kinds.items():
        if head.startswith(magic):
            return f"; it looks like {kind} renamed to .npz"
    return ""


def _array_header(path: Path, key: str) -> tuple[tuple[int, ...], np.dtype, int, int]:
    """(shape, dtype, header bytes, stored bytes) of the array ``key`` in the archive, read
    without unpacking the array."""
    try:
        with zipfile.ZipFile(path) as archive, archive.open(key + ".npy") as member:
            stored = archive.getinfo(key + ".npy").file_size
            version = np.lib.format.read_magic(member)
            reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, _fortran, dtype = reader(member)
            return tuple(shape), dtype, member.tell(), stored
    except (KeyError, ValueError, OSError, zipfile.BadZipFile) as e:
        raise _bad(path, f"the {key} array has an unreadable header ({e})") from e


def _check_headers(path: Path, max_duration_s: float) -> None:
    """What the arrays' headers declare, checked before NumPy allocates it: the codes fit the bytes
    the archive holds for them (a crafted (10**12, 16) over a few bytes would otherwise end in a
    MemoryError) and the duration limit; the metadata is one short string."""
    shape, dtype, header, stored = _array_header(path, CODES_KEY)
    declared = math.prod(shape) * dtype.itemsize
    if declared > stored - header:
        raise _bad(
            path,
            f"the codes array declares shape {tuple(shape)} ({declared / MIB:,.0f} MiB) but the "
            f"file holds {max(stored - header, 0):,} bytes of it: it is damaged or was crafted",
        )
    if len(shape) == 2 and shape[1] == NUM_CODEBOOKS:
        try:
            check_duration([shape[0]], max_duration_s)
        except TokenFileError as e:
            raise TokenFileError(f"{path.name}: {e}") from e
    meta_shape, meta_dtype, _header, _stored = _array_header(path, METADATA_KEY)
    if meta_dtype.kind != "O" and math.prod(meta_shape) * meta_dtype.itemsize > 4 * MAX_METADATA_CHARS:
        raise _bad(path, f"the metadata is not a short JSON string (got {meta_dtype} of shape {meta_shape})")


def _read_arrays(path: Path, max_duration_s: float) -> tuple[np.ndarray, np.ndarray]:
    _check_headers(path, max_duration_s)
    try:
        with np.load(path, allow_pickle=False) as npz:
            return npz[CODES_KEY], npz[METADATA_KEY]
    except ValueError as e:  # object arrays (pickles) and malformed .npy headers
        raise _bad(path, f"an array in the archive cannot be read safely ({e})") from e
    except (OSError, EOFError, zipfile.BadZipFile, KeyError) as e:
        raise _bad(path, f"the archive is damaged ({e})") from e


def _parse_metadata(path: Path, array: np.ndarray) -> dict:
    """The JSON object in the metadata array, with every required field of the right type."""
    if array.dtype.kind != "U" or array.ndim != 0 or array.dtype.itemsize > 4 * MAX_METADATA_CHARS:
        raise _bad(path, f"the metadata is not a JSON string (got {array.dtype} of shape {array.shape})")
    try:
        meta = json.loads(str(array))
    except json.JSONDecodeError as e:
        raise _bad(path, f"the metadata is not valid JSON ({e})") from e
    if not isinstance(meta, dict):
        raise _bad(path, "the metadata is not a JSON object")
    if meta.get("format") != FORMAT_NAME:
        raise _bad(
            path, f"not a Codec Workbench token file (format is {meta.get('format')!r}, expected {FORMAT_NAME!r})"
        )
    _check_version(path, meta.get("format_version"))
    for name, types in _REQUIRED_METADATA.items():
        if name not in meta:
            raise _bad(path, f"the metadata lacks the field {name!r}")
        value = meta[name]
        if not isinstance(value, types) or isinstance(value, bool):
            raise _bad(path, f"the metadata field {name!r} has the wrong type ({type(value).__name__})")
    if meta["sample_rate"] != SAMPLE_RATE:
        raise _bad(path, f"the codes are for {meta['sample_rate']} Hz audio; this codec works at {SAMPLE_RATE} Hz")
    if meta["frame_rate"] != FRAME_RATE:
        raise _bad(path, f"the codes are at {meta['frame_rate']} frames/s; this codec makes {FRAME_RATE} frames/s")
    rate = meta.get("decoder_rate_hz")
    if rate is not None and (not isinstance(rate, int) or isinstance(rate, bool) or rate <= 0):
        raise _bad(path, f"the metadata field 'decoder_rate_hz' is not a positive integer ({rate!r})")
    for name, expected in (("num_codebooks", NUM_CODEBOOKS), ("codebook_size", CODEBOOK_SIZE)):
        if meta.get(name, expected) != expected:
            raise _bad(path, f"the metadata says {name} = {meta[name]!r}; this codec has {expected}")
    return meta


def _check_version(path: Path, version) -> None:
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise _bad(path, f"the format version {version!r} is not valid")
    if version > FORMAT_VERSION:
        raise _bad(
            path,
            f"format version {version} was made by a newer Codec Workbench (this one reads version {FORMAT_VERSION})",
            "Upgrade Codec Workbench to load it.",
        )


def _frozen_int16(codes: np.ndarray) -> np.ndarray:
    codes = np.array(codes, dtype=np.int16, order="C")  # a copy the caller cannot change
    codes.flags.writeable = False
    return codes


def _checksum(codes: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(codes, dtype="<i2").tobytes()).hexdigest()
