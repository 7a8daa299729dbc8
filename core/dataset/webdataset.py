"""WebDataset ``.tar`` shards as input: a file, a folder of shards, or a pattern (``data-{000..099}.tar``,
``data-*.tar``).

A sample is the run of consecutive members that share a key: the member's path up to the first dot of
its file name (``a/utt1.mp3`` and ``a/utt1.json`` are sample ``a/utt1``, fields ``mp3`` and ``json``),
as WebDataset and ``datasets``' webdataset loader group them. The first member whose extension the
audio readers open is the audio; ``.json`` members are parsed and kept as a field, other small members
as text (``.txt``, ``.cls``, ...); anything else (a second audio member, an image) is not copied, and
the manifest counts it. ``__key__`` and ``__url__`` (the shard) are kept too.

The index half (``read_shards``) reads only headers and the small members; the read half
(``read_member``) reads the audio member from its offset in the shard in the decode task
(:mod:`core.dataset.decode`). A damaged shard ends at the last whole member: the
samples before it are kept, and the damage is an ``errors.jsonl`` line with the shard and the key.
"""

from __future__ import annotations

import glob
import itertools
import json
import logging
import re
import tarfile
from collections import Counter
from pathlib import Path

from core.audio.readers import AUDIO_SUFFIXES
from core.dataset.rows import InputError, Inputs, Item, printable, split, to_json
from core.errors import AudioInputError, CodecError
from core.settings import AudioLimits
from core.units import MIB

logger = logging.getLogger(__name__)

TEXT_MEMBER_BYTES = MIB  # members up to this size that decode as UTF-8 are kept as text fields
_RANGE = re.compile(r"\{(\d+)\.\.(\d+)\}")
_AUDIO_EXTS = {s.lstrip(".") for s in AUDIO_SUFFIXES}


def expand(pattern: str) -> list[Path]:
    """``{000..099}`` ranges (zero-padded as written) and ``{a,b}`` lists, then shell globs; the shards
    in the order the pattern gives (globs sorted). Names the pattern gives that do not exist stay in
    the list: each becomes an error line."""
    match = _RANGE.search(pattern)
    if match:
        first, last = match.group(1), match.group(2)
        width = len(first) if first.startswith("0") else 0
        return [
            p
            for n in range(int(first), int(last) + 1)
            for p in expand(pattern[: match.start()] + str(n).zfill(width) + pattern[match.end() :])
        ]
    lists = re.search(r"\{([^{}]*,[^{}]*)\}", pattern)
    if lists:
        return [
            p
            for part in lists.group(1).split(",")
            for p in expand(pattern[: lists.start()] + part + pattern[lists.end() :])
        ]
    if any(c in pattern for c in "*?["):
        found = sorted(Path(p) for p in glob.glob(pattern))
        if not found:
            raise CodecError(f"{pattern} matches no file; check the pattern.")
        return found
    return [Path(pattern)]


def split_name(name: str) -> tuple[str, str]:
    """(key, field) of a member name: ``dir/utt1.seg.json`` -> (``dir/utt1``, ``seg.json``)."""
    folder, _, base = name.rpartition("/")
    stem, dot, ext = base.partition(".")
    return (f"{folder}/{stem}" if folder else stem), (ext.lower() if dot else "")


class _Shard:
    """Reads one shard's headers and small members, sample by sample."""

    def __init__(self, path: Path, rows: list, left_out: Counter):
        self.path, self.rows, self.left_out = path, rows, left_out
        self.source = printable(path.name)
        self.size = path.stat().st_size

    def error(self, key: str, reason: str) -> None:
        self.rows.append(InputError(len(self.rows), key, reason, self.source))

    def read(self) -> None:
        try:
            tar = tarfile.open(self.path, mode="r:", encoding="utf-8", errors="surrogateescape")
        except (tarfile.TarError, OSError) as e:
            self.error(self.source, f"not a readable tar file ({e}); a WebDataset shard is a plain .tar.")
            return
        with tar:
            members = self._members(tar)
            for key, group in itertools.groupby(members, key=lambda m: split_name(m.name)[0]):
                self._sample(tar, key, list(group))

    def _members(self, tar):
        last = None
        while True:
            try:
                member = tar.next()
            except (tarfile.TarError, OSError) as e:
                where = f"after {printable(last.name)}" if last else "at its start"
                self.error(
                    f"{self.source}: {where}", f"the shard is damaged {where} ({e}); the samples after it are lost."
                )
                return
            if member is None:  # tarfile also stops here, silently, at a damaged header after the first
                if _data_after(self.path, tar.offset):
                    where = f"after {printable(last.name)}" if last else "at its start"
                    self.error(
                        f"{self.source}: {where}", f"the shard is damaged {where}: the samples after it are lost."
                    )
                return
            if member.isfile():
                last = member
                yield member

    def _sample(self, tar, key: str, members: list) -> None:
        shown = printable(key)
        fields: dict = {"__key__": shown, "__url__": self.source}
        audio = None
        for m in members:
            ext = split_name(m.name)[1]
            if m.offset_data + m.size > self.size:
                return self.error(shown, f"member {printable(m.name)} is cut short: the shard is truncated.")
            if audio is None and ext.rsplit(".", 1)[-1] in _AUDIO_EXTS:
                audio = m
                continue
            if ext.endswith("json"):
                try:
                    fields[ext] = json.loads(tar.extractfile(m).read())  # type: ignore[union-attr]
                except (ValueError, UnicodeDecodeError) as e:
                    return self.error(shown, f"member {printable(m.name)} is not valid JSON ({e}); fix or remove it.")
                continue
            text = _text(tar, m)
            if text is None:
                self.left_out[ext or "(none)"] += 1
            else:
                fields[ext] = text
        if audio is None:
            names = ", ".join(printable(m.name) for m in members)
            return self.error(
                shown, f"the sample has no audio member ({names}); audio means {', '.join(AUDIO_SUFFIXES)}."
            )
        locator = json.dumps({"offset": audio.offset_data, "size": audio.size, "member": printable(audio.name)})
        self.rows.append(Item(len(self.rows), shown, str(self.path.resolve()), to_json(fields), locator, self.source))


def _data_after(path: Path, offset: int) -> bool:
    """Whether anything but the end-of-archive zeros follows ``offset``."""
    with open(path, "rb") as f:
        f.seek(offset)
        while block := f.read(MIB):
            if block.strip(b"\0"):
                return True
    return False


def _text(tar, member) -> str | None:
    if member.size > TEXT_MEMBER_BYTES:
        return None
    try:
        return tar.extractfile(member).read().decode("utf-8")  # type: ignore[union-attr]
    except UnicodeDecodeError:
        return None


def read_shards(paths: list[Path], given: str) -> Inputs:
    """The samples of the shards, in shard order then member order."""
    rows: list[Item | InputError] = []
    left_out: Counter = Counter()
    for path in paths:
        if not path.is_file():
            rows.append(InputError(len(rows), printable(path.name), "this shard does not exist.", printable(path.name)))
            continue
        _Shard(path, rows, left_out).read()
    items, errors = split(rows)
    if not items:
        raise CodecError(f"{given}: no sample with an audio member in {len(paths)} shard(s).")
    notes = {f"tar members .{ext}": f"{n} not copied (binary or over 1 MiB)" for ext, n in sorted(left_out.items())}
    return Inputs("webdataset", items, errors, left_out=notes)


def read_member(path: str, where: dict, limits: AudioLimits) -> tuple[bytes, str]:
    """(bytes, name) of the audio member the locator ``where`` points at."""
    if where["size"] > limits.max_file_bytes:
        raise AudioInputError(f"'{where['member']}' is {where['size']} bytes, over the file-size limit.")
    with open(path, "rb") as f:
        f.seek(where["offset"])
        data = f.read(where["size"])
    if len(data) < where["size"]:
        raise AudioInputError(f"'{where['member']}' is cut short: the shard is truncated.")
    return data, where["member"]
