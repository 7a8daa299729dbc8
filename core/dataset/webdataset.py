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
import posixpath
import re
import tarfile
from collections import Counter
from pathlib import Path

from core.audio.readers import AUDIO_SUFFIXES
from core.dataset.rows import (
    MAX_JSON_BYTES,
    InputError,
    Inputs,
    Item,
    JsonRefused,
    parse_json,
    printable,
    split,
    to_json,
)
from core.errors import AudioInputError, CodecError
from core.settings import AudioLimits
from core.units import MIB

logger = logging.getLogger(__name__)

TEXT_MEMBER_BYTES = MIB  # members up to this size that decode as UTF-8 are kept as text fields
MAX_PATTERN_NAMES = 100_000  # names a brace pattern may give (counted before any is made)
MAX_MEMBERS_PER_SHARD = 100_000  # members read from one shard; past it one line says the rest were not read
MAX_ERRORS_PER_SHARD = 1_000  # error lines kept for one shard; the rest are counted in one line
_KINDS = {
    tarfile.CHRTYPE: "a character device",
    tarfile.BLKTYPE: "a block device",
    tarfile.FIFOTYPE: "a FIFO (named pipe)",
    tarfile.CONTTYPE: "a contiguous file",
}
_RANGE = re.compile(r"\{(\d+)\.\.(\d+)\}")
_BRACES = re.compile(r"\{([^{}]*)\}")
_AUDIO_EXTS = {s.lstrip(".") for s in AUDIO_SUFFIXES}


def expand(pattern: str) -> list[Path]:
    """``{000..099}`` ranges (zero-padded as written) and ``{a,b}`` lists, then shell globs; the shards
    in the order the pattern gives (globs sorted). Names the pattern gives that do not exist stay in
    the list: each becomes an error line. The names are counted before any is made: a pattern that
    gives more than ``MAX_PATTERN_NAMES`` is refused at once ('{0..9999}{0..9999}' is 10^8 names,
    which took 2.4 GB in 60 s before)."""
    count = pattern_names(pattern)
    if count > MAX_PATTERN_NAMES:
        raise CodecError(
            f"{printable(pattern)} gives {count:,} names, over the {MAX_PATTERN_NAMES:,} a pattern may give; "
            "give a shorter range, or a folder of shards."
        )
    return _expand(pattern)


def pattern_names(pattern: str) -> int:
    """How many names the brace groups of ``pattern`` give, without making any."""
    count = 1
    for match in _BRACES.finditer(pattern):
        body = match.group(1)
        ranged = _RANGE.fullmatch("{" + body + "}")
        if ranged:
            count *= max(0, int(ranged.group(2)) - int(ranged.group(1)) + 1)
        elif "," in body:
            count *= len(body.split(","))
    return count


def _expand(pattern: str) -> list[Path]:
    match = _RANGE.search(pattern)
    if match:
        first, last = match.group(1), match.group(2)
        width = len(first) if first.startswith("0") else 0
        return [
            p
            for n in range(int(first), int(last) + 1)
            for p in _expand(pattern[: match.start()] + str(n).zfill(width) + pattern[match.end() :])
        ]
    lists = re.search(r"\{([^{}]*,[^{}]*)\}", pattern)
    if lists:
        return [
            p
            for part in lists.group(1).split(",")
            for p in _expand(pattern[: lists.start()] + part + pattern[lists.end() :])
        ]
    if any(c in pattern for c in "*?["):
        found = sorted(Path(p) for p in glob.glob(pattern))
        if not found:
            raise CodecError(f"{printable(pattern)} matches no file; check the pattern.")
        return found
    return [Path(pattern)]


def split_name(name: str) -> tuple[str, str]:
    """(key, field) of a member name: ``dir/utt1.seg.json`` -> (``dir/utt1``, ``seg.json``)."""
    folder, _, base = name.rpartition("/")
    stem, dot, ext = base.partition(".")
    return (f"{folder}/{stem}" if folder else stem), (ext.lower() if dot else "")


class _Shard:
    """Reads one shard's headers and small members, sample by sample, in bounded memory: tarfile's
    list of every member is not kept (it grew 6 KB per member), at most ``MAX_MEMBERS_PER_SHARD``
    members and ``MAX_ERRORS_PER_SHARD`` error lines are kept, each cap met with one line."""

    def __init__(self, path: Path, rows: list, left_out: Counter, notes: dict[str, str]):
        self.path, self.rows, self.left_out, self.notes = path, rows, left_out, notes
        self.source = printable(path.name)
        self.resolved = str(path.resolve())  # one string for every row of the shard
        self.size = path.stat().st_size
        self.regular: dict[str, tuple[int, int]] = {}  # member name -> (offset, size): hard links' targets
        self.keys: set[str] = set()  # sample keys seen, to warn of one that comes back later
        self.repeated: list[str] = []
        self.errors = 0  # error lines of this shard (kept or not)
        self.members = 0

    def error(self, key: str, reason: str, always: bool = False) -> None:
        """An error line; past ``MAX_ERRORS_PER_SHARD`` a sample's line is counted instead (``always``:
        what ends the shard, damage or the member cap, is always a line)."""
        if not always:
            self.errors += 1
        if always or self.errors <= MAX_ERRORS_PER_SHARD:
            self.rows.append(InputError(len(self.rows), key, reason, self.source))

    def read(self) -> None:
        try:
            tar = tarfile.open(self.path, mode="r:", encoding="utf-8", errors="surrogateescape")
        except (tarfile.TarError, OSError) as e:
            self.error(self.source, f"not a readable tar file ({e}); a WebDataset shard is a plain .tar.")
            return
        with tar, open(self.path, "rb") as self.file:
            for key, group in itertools.groupby(self._members(tar), key=lambda m: split_name(m.name)[0]):
                self._sample(key, list(group))
        if self.errors > MAX_ERRORS_PER_SHARD:
            self.rows.append(
                InputError(
                    len(self.rows),
                    f"{self.source}: {self.errors - MAX_ERRORS_PER_SHARD} more",
                    f"{self.errors - MAX_ERRORS_PER_SHARD:,} more samples of this shard had errors, not listed one by "
                    f"one (at most {MAX_ERRORS_PER_SHARD:,} lines a shard); fix the shard and run again.",
                    self.source,
                )
            )
        if self.repeated:
            shown = ", ".join(printable(k) for k in self.repeated[:5])
            note = f"{len(self.repeated)} key(s) come back later in the shard (first: {shown}); each run is a row"
            self.notes[f"duplicate keys in {self.source}"] = note
            logger.warning("%s: %s", self.source, note)

    def _members(self, tar):
        last = None
        while True:
            try:
                member = tar.next()
            except (tarfile.TarError, OSError) as e:
                where = f"after {printable(last.name)}" if last else "at its start"
                self.error(
                    f"{self.source}: {where}",
                    f"the shard is damaged {where} ({e}); the samples after it are lost.",
                    always=True,
                )
                return
            tar.members.clear()  # tarfile keeps every member it read; nothing here needs them again
            if member is None:  # tarfile also stops here, silently, at a damaged header after the first
                if _data_after(self.path, tar.offset):
                    where = f"after {printable(last.name)}" if last else "at its start"
                    self.error(
                        f"{self.source}: {where}",
                        f"the shard is damaged {where}: the samples after it are lost.",
                        always=True,
                    )
                return
            self.members += 1
            if self.members > MAX_MEMBERS_PER_SHARD:
                self.error(
                    f"{self.source}: after {printable(last.name) if last else 'its start'}",
                    f"the shard has more than {MAX_MEMBERS_PER_SHARD:,} members; the rest were not read. Split it into "
                    "smaller shards.",
                    always=True,
                )
                return
            if member.isdir():
                self.left_out["(folder)"] += 1
                continue
            if member.isfile():
                self.regular[member.name] = (member.offset_data, member.size)
            last = member
            yield member

    def _resolved(self, m) -> tuple[int, int] | str:
        """(offset, size) of a member's data, following a hard link to an earlier member; or why not."""
        name = printable(m.name)
        if m.isfile():
            return m.offset_data, m.size
        if m.islnk():
            target = self.regular.get(m.linkname) or self.regular.get(posixpath.normpath(m.linkname))
            if target is None:
                return (
                    f"member {name} is a hard link to {printable(m.linkname)}, which is not an earlier member of this "
                    "shard; store the file itself."
                )
            return target
        if m.issym():
            return (
                f"member {name} is a symbolic link (to {printable(m.linkname)}); links are not followed (one could "
                "point outside the archive): store the file itself."
            )
        return f"member {name} is {_KINDS.get(m.type, 'not a regular file')}; a sample's members must be files."

    def _sample(self, key: str, members: list) -> None:
        shown = printable(key)
        if key in self.keys:
            self.repeated.append(key)
        self.keys.add(key)
        fields: dict = {"__key__": shown, "__url__": self.source}
        audio = None
        for m in members:
            ext = split_name(m.name)[1]
            where = self._resolved(m)
            if isinstance(where, str):
                return self.error(shown, where)
            offset, size = where
            if offset + size > self.size:
                return self.error(shown, f"member {printable(m.name)} is cut short: the shard is truncated.")
            if audio is None and ext.rsplit(".", 1)[-1] in _AUDIO_EXTS:
                audio = (m, offset, size)
                continue
            if ext.endswith("json"):
                if size > MAX_JSON_BYTES:
                    return self.error(
                        shown,
                        f"member {printable(m.name)} is {size / MIB:.1f} MiB of JSON, over the "
                        f"{MAX_JSON_BYTES // MIB} MiB a sample's fields may hold; keep large data apart.",
                    )
                try:
                    fields[ext] = parse_json(self._read(offset, size), f"member {printable(m.name)}")
                except JsonRefused as e:
                    return self.error(shown, str(e))
                continue
            text = self._text(offset, size)
            if text is None:
                self.left_out[ext or "(none)"] += 1
            else:
                fields[ext] = text
        if audio is None:
            names = ", ".join(printable(m.name) for m in members)
            return self.error(
                shown, f"the sample has no audio member ({names}); audio means {', '.join(AUDIO_SUFFIXES)}."
            )
        member, offset, size = audio
        locator = json.dumps({"offset": offset, "size": size, "member": printable(member.name)})
        self.rows.append(Item(len(self.rows), shown, self.resolved, to_json(fields), locator, self.source))

    def _read(self, offset: int, size: int) -> bytes:
        self.file.seek(offset)
        return self.file.read(size)

    def _text(self, offset: int, size: int) -> str | None:
        if size > TEXT_MEMBER_BYTES:
            return None
        try:
            return self._read(offset, size).decode("utf-8")
        except UnicodeDecodeError:
            return None


def _data_after(path: Path, offset: int) -> bool:
    """Whether anything but the end-of-archive zeros follows ``offset``."""
    with open(path, "rb") as f:
        f.seek(offset)
        while block := f.read(MIB):
            if block.strip(b"\0"):
                return True
    return False


def read_shards(paths: list[Path], given: str) -> Inputs:
    """The samples of the shards, in shard order then member order."""
    rows: list[Item | InputError] = []
    left_out: Counter = Counter()
    notes: dict[str, str] = {}
    for path in paths:
        if not path.is_file():
            rows.append(InputError(len(rows), printable(path.name), "this shard does not exist.", printable(path.name)))
            continue
        _Shard(path, rows, left_out, notes).read()
    items, errors = split(rows)
    if not items:
        raise CodecError(f"{given}: no sample with an audio member in {len(paths)} shard(s).")
    notes |= {f"tar members .{ext}": f"{n} not copied (binary or over 1 MiB)" for ext, n in sorted(left_out.items())}
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
