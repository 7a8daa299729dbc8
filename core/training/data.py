"""Training pairs (codes, audio): read once before the first step and kept in the run folder.

DATA is anything ``python -m core tokenize`` reads (its readers, :mod:`core.dataset.inputs`), or a
tokenize output folder: then the codes are read from its shards and the audio from the input its
``job.json`` names (each clip's bytes checked against the recorded checksum), so the encoder never
runs. Otherwise each clip is encoded once, whole, by the base checkpoint's frozen encoder and
quantizer: a fine-tuned decoder learns exactly the codes its base makes.

The pairs go to ``OUT/prepared/`` (``NNNNNN.codes.npy`` int16 (frames, 16), ``NNNNNN.audio.npy``
float32 at 24 kHz padded to whole frames, ``index.json``); a resumed run and every DDP process read
them from there (memory-mapped). A clip that cannot be read is a line in the log and in
``prepared/skipped.jsonl``; the run goes on without it.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.codec import SAMPLE_RATE, SAMPLES_PER_FRAME
from core.errors import TrainingError

logger = logging.getLogger(__name__)

PREPARED = "prepared"  # sub-folder of the run folder
INDEX = "index.json"
SKIPPED = "skipped.jsonl"


@dataclass(frozen=True)
class Clip:
    id: str  # "000042": the clip's place in the input, as the split records it
    key: str  # what names it to the user (file, row, tar key)
    frames: int  # code frames (12.5 per second)

    @property
    def seconds(self) -> float:
        return self.frames * SAMPLES_PER_FRAME / SAMPLE_RATE


def is_tokenize_output(data: Path | str) -> bool:
    folder = Path(data)
    return folder.is_dir() and (folder / "job.json").is_file() and (folder / "shards").is_dir()


def read_index(folder: Path) -> list[Clip]:
    """The prepared clips of a run folder (``[]`` when none were prepared yet)."""
    path = Path(folder) / PREPARED / INDEX
    if not path.is_file():
        return []
    return [Clip(**row) for row in json.loads(path.read_text(encoding="utf-8"))]


def load_pair(folder: Path, clip_id: str) -> tuple[np.ndarray, np.ndarray]:
    """(codes (frames, 16) int16, audio float32) of one prepared clip, memory-mapped."""
    base = Path(folder) / PREPARED
    return np.load(base / f"{clip_id}.codes.npy", mmap_mode="r"), np.load(base / f"{clip_id}.audio.npy", mmap_mode="r")


def count_rows(settings) -> dict:
    """What the data holds without reading any audio (for the plan): rows, rows without audio, kind."""
    if is_tokenize_output(settings.data):
        manifest = Path(settings.data) / "manifest.json"
        job = json.loads((Path(settings.data) / "job.json").read_text(encoding="utf-8"))
        about = json.loads(manifest.read_text(encoding="utf-8")) if manifest.is_file() else {}
        return {"kind": "tokenize output", "rows": job.get("items"), "model": job.get("model"), "about": about}
    inputs = _inputs(settings)
    found = {"kind": inputs.kind, "rows": len(inputs.items), "without_audio": len(inputs.errors)}
    return found | header_seconds([i.path for i in inputs.items if not i.locator][:MAX_HEADERS])


MAX_HEADERS = 20_000  # audio files whose headers the plan reads for their lengths (beyond: not counted)


def header_seconds(paths: list[str]) -> dict:
    """Seconds of audio the files' headers declare (no audio is decoded): the total, the longest, and how
    many files soundfile could not tell (their length is known only when they are read)."""
    import soundfile

    total, longest, unknown = 0.0, 0.0, 0
    for path in paths:
        try:
            seconds = float(soundfile.info(path).duration)
        except (OSError, RuntimeError, ValueError):
            unknown += 1
            continue
        total, longest = total + seconds, max(longest, seconds)
    return {"audio_s": total, "longest_s": longest, "length_unknown": unknown}


def _inputs(settings):
    from core.dataset.inputs import read_inputs

    if not Path(str(settings.data)).exists() and not any(c in str(settings.data) for c in "{*?["):
        raise TrainingError(f"The data {settings.data} does not exist: give a folder of audio, a manifest or shards.")
    try:
        inputs = read_inputs(settings.data, settings.audio_column, settings.data_root, exclude=Path(settings.out))
    except TrainingError:
        raise
    except Exception as e:  # the readers' own sentences (CodecError) or a broken table
        raise TrainingError(f"The data {settings.data} cannot be read: {e}") from e
    if not inputs.items:
        raise TrainingError(
            f"{settings.data} holds no audio ({len(inputs.errors)} rows without audio): "
            "give a folder of audio files, a manifest, Parquet, WebDataset shards or a tokenize output."
        )
    return inputs


def prepare(settings, encoder_model, rate: int = SAMPLE_RATE) -> list[Clip]:
    """Read every clip of ``settings.data`` into ``OUT/prepared/`` with its codes; returns the clips.
    ``encoder_model``: the base's ``Qwen3TTSTokenizerV2Model`` (only its encoder is run, under no_grad),
    or None when DATA is a tokenize output; ``rate``: the rate the decoder writes (its targets' rate)."""
    out = Path(settings.out) / PREPARED
    out.mkdir(parents=True, exist_ok=True)
    clips: list[Clip] = []
    skipped = []
    upsampled = 0
    for index, key, audio, codes, reason, path in _pairs(settings, encoder_model):
        if reason:
            logger.warning("skipped %s: %s", key, reason)
            skipped.append({"index": index, "clip": key, "reason": reason})
            continue
        clip = Clip(id=f"{index:06d}", key=key, frames=int(codes.shape[0]))
        if rate != SAMPLE_RATE:
            audio, native = target_audio(path, audio, rate, settings)
            upsampled += not native
        padded = np.zeros(clip.frames * SAMPLES_PER_FRAME * rate // SAMPLE_RATE, dtype=np.float32)
        padded[: min(audio.size, padded.size)] = audio[: padded.size]
        np.save(out / f"{clip.id}.codes.npy", np.ascontiguousarray(codes, dtype=np.int16))
        np.save(out / f"{clip.id}.audio.npy", padded)
        clips.append(clip)
    if upsampled:
        logger.warning(
            "%d clips are trained against 24 kHz audio resampled to %d Hz (their source is not a file read at its "
            "own rate here, or is at 24 kHz or less): nothing above 12 kHz to learn from them",
            upsampled,
            rate,
        )
    (out / SKIPPED).write_text("".join(json.dumps(s) + "\n" for s in skipped), encoding="utf-8")
    if not clips:
        reasons = "; ".join(f"{s['clip']}: {s['reason']}" for s in skipped[:3])
        raise TrainingError(f"No clip of {settings.data} could be read ({reasons}).")
    (out / INDEX).write_text(json.dumps([c.__dict__ for c in clips], indent=1), encoding="utf-8")
    logger.info("prepared %d clips (%.1f s), skipped %d", len(clips), sum(c.seconds for c in clips), len(skipped))
    return clips


def target_audio(path: str | None, audio24: np.ndarray, rate: int, settings) -> tuple[np.ndarray, bool]:
    """The clip at ``rate`` (48 kHz decoders): read again at its own rate and resampled when it is a file
    soundfile reads and its rate is above 24 kHz (True), else the 24 kHz audio resampled (False)."""
    import soundfile
    import soxr

    if path:
        try:
            data, source_rate = soundfile.read(path, dtype="float32", always_2d=True)
            if source_rate > SAMPLE_RATE:
                mono = data.mean(axis=1)
                mono = mono[: int(settings.max_clip_s * source_rate)] if settings.max_clip_s > 0 else mono
                return soxr.resample(mono, source_rate, rate).astype(np.float32), True
        except (OSError, RuntimeError, ValueError):
            logger.debug("%s is not read at its own rate; resampling its 24 kHz audio", path)
    return soxr.resample(audio24, SAMPLE_RATE, rate).astype(np.float32), False


def _limits(settings):
    from core.settings import AudioLimits

    return AudioLimits()


def _cut(settings, samples: np.ndarray) -> np.ndarray:
    limit = int(settings.max_clip_s * SAMPLE_RATE) if settings.max_clip_s > 0 else samples.size
    return samples[:limit]


def _pairs(settings, encoder_model):
    """(index, key, audio, codes, reason, file) per input row; reason "" when the pair is good; file: the
    audio file's path when the row is a plain file (None inside a table or a tar)."""
    from core.dataset.decode import decode_items

    if is_tokenize_output(settings.data):
        yield from _tokenized_pairs(settings)
        return
    inputs = _inputs(settings)
    for error in inputs.errors:
        yield error.index, error.key, None, None, error.reason, None
    items = list(inputs.items)
    decoded = decode_items([i.path for i in items], [i.locator for i in items], _limits(settings))
    for item, (audio, _sha, reason) in zip(items, decoded, strict=True):
        if audio is None:
            yield item.index, item.key, None, None, reason, None
            continue
        samples = _cut(settings, audio.samples)
        yield (
            item.index,
            item.key,
            samples,
            encode_clip(encoder_model, samples),
            "",
            None if item.locator else item.path,
        )


def encode_clip(model, samples: np.ndarray) -> np.ndarray:
    """The base's codes of a whole clip (frames, 16) int16: its frozen encoder and quantizer, once."""
    import torch

    parameter = next(model.encoder.parameters())
    with torch.inference_mode():
        wav = torch.from_numpy(np.ascontiguousarray(samples))[None].to(parameter.device, parameter.dtype)
        codes = model.encode(wav, torch.ones_like(wav, dtype=torch.long), return_dict=True).audio_codes[0]
    return codes.to(torch.int16).cpu().numpy()


def _tokenized_pairs(settings):
    from core.dataset.decode import decode_items
    from core.dataset.inputs import read_inputs
    from core.dataset.shards import codes_of, read_shards

    folder = Path(settings.data)
    job = json.loads((folder / "job.json").read_text(encoding="utf-8"))
    if not _same_model(job.get("model"), settings.model):
        raise TrainingError(
            f"The codes in {folder} were made by {job.get('model')}, not by --model {settings.model}: a decoder "
            "must learn its own base's codes. Fine-tune that model, or tokenize the data with this one."
        )
    rows: dict[int, tuple[np.ndarray, str, str]] = {}
    for table in read_shards(folder, ["index", "audio", "source_sha256", "audio_codes"]):
        for row in range(table.num_rows):
            index = int(table.column("index")[row].as_py())
            rows[index] = (
                codes_of(table, row),
                table.column("audio")[row].as_py(),
                table.column("source_sha256")[row].as_py(),
            )
    if not rows:
        raise TrainingError(f"{folder} holds no finished shards of codes: finish the tokenize job first.")
    try:
        inputs = read_inputs(job["input"], settings.audio_column, settings.data_root, exclude=folder)
    except Exception as e:
        raise TrainingError(
            f"The audio of {folder} is read from {job['input']}, which cannot be read now ({e}): the pairs need it."
        ) from e
    items = [i for i in inputs.items if i.index in rows]
    decoded = decode_items([i.path for i in items], [i.locator for i in items], _limits(settings))
    for item, (audio, sha, reason) in zip(items, decoded, strict=True):
        codes, key, recorded = rows[item.index]
        if audio is None:
            yield item.index, key, None, None, reason, None
        elif sha != recorded:
            yield item.index, key, None, None, "the audio changed since it was tokenized (checksum differs)", None
        else:
            samples = _cut(settings, audio.samples)
            frames = -(-samples.size // SAMPLES_PER_FRAME)
            yield item.index, key, samples, codes[:frames], "", None if item.locator else item.path


def _same_model(recorded: str | None, given: str) -> bool:
    if recorded is None:
        return False
    if recorded == str(given):
        return True
    a, b = Path(recorded).expanduser(), Path(str(given)).expanduser()
    return a.exists() and b.exists() and a.resolve() == b.resolve()


def held_out_count(clips: int, settings) -> int:
    """How many of ``clips`` are held out: ``val_clips``, else ``val_share`` of them (at least 1), leaving one to train on."""
    want = settings.val_clips or max(1, round(settings.val_share * clips))
    return max(0, min(want, clips - 1))


def split(clips: list[Clip], settings) -> dict:
    """The held-out split, fixed by the seed: ``{"train": [ids], "val": [ids]}``. Training clips are
    those at least one segment long; a clip too short for a segment is left out with a line."""
    import random

    if len(clips) < 2:
        raise TrainingError(
            f"{settings.data} has {len(clips)} usable clip: at least 2 are needed (one to train on, one held out)."
        )
    want = held_out_count(len(clips), settings)
    order = sorted(clips, key=lambda c: c.id)
    random.Random(settings.seed).shuffle(order)
    val = order[:want]
    train = [c for c in order[want:] if c.frames >= settings.segment_frames]
    short = len(order) - want - len(train)
    if short:
        logger.warning(
            "%d training clips are shorter than one %.2f s segment and are left out", short, settings.segment_s
        )
    if not train:
        longest = max(c.seconds for c in order[want:])
        raise TrainingError(
            f"Too little audio for a training segment: no training clip is at least {settings.segment_frames / 12.5:.2f} s "
            f"long (the longest is {longest:.2f} s). Use a shorter --segment-s or longer clips."
        )
    return {"train": sorted(c.id for c in train), "val": sorted(c.id for c in val), "short": short}
