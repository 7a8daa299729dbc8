"""The order a tokenize job's items go to the decode tasks: by length, so each encode call gets clips of
about one length and its padded batch holds little padding.

The length of an item is guessed without reading it: the bytes of its audio (a file's size, a tar
member's size), which within one format and rate grow with its duration. Items inside Parquet or
Arrow tables have no cheap size; they keep their input order, grouped by the row group or record
batch a decode task reads at once (:func:`decode_tasks`).

Items are sorted within windows of whole shards (:func:`window_files`), never across the whole input:
a shard is written once all its items have a result, so each window's shards are written as the job
goes, and a job stopped part way keeps them (resume). Which row gets which codes does not depend on
the order: every row travels with its index, key and source.
"""

from __future__ import annotations

import itertools
import json
import os

from core.dataset.rows import Item

ORDER_WINDOW_CALLS = 8  # a window holds about this many encode calls' clips (whole shards)
CHUNK_TASK_FACTOR = 8  # a decode task takes up to this many times --decode-files rows of one table chunk


def size_hint(item: Item) -> int | None:
    """Bytes of the item's audio, known without reading it: a file's size or a tar member's; None
    for table cells and files that cannot be read (their decode task gives the reason)."""
    if not item.locator:
        try:
            return os.stat(item.path).st_size
        except OSError:
            return None
    where = json.loads(item.locator)
    return int(where["size"]) if "offset" in where and "size" in where else None


def window_files(shard_size: int, batch_files: int) -> int:
    """Items per sorting window: about :data:`ORDER_WINDOW_CALLS` encode calls' clips, in whole shards."""
    want = max(shard_size, ORDER_WINDOW_CALLS * batch_files)
    return -(-want // shard_size) * shard_size


def in_length_order(todo: list[Item], shard_size: int, batch_files: int) -> list[Item]:
    """``todo`` (in index order) with each window's sized items longest first; the items without a
    size hint follow them in their input order. Every item is kept exactly once."""
    size = window_files(shard_size, batch_files)
    out: list[Item] = []
    for _, group in itertools.groupby(todo, key=lambda i: i.index // size):
        items = list(group)
        hints = [size_hint(i) for i in items]
        sized = sorted((j for j, h in enumerate(hints) if h is not None), key=lambda j: -(hints[j] or 0))
        out += [items[j] for j in sized] + [i for i, h in zip(items, hints, strict=True) if h is None]
    return out


def chunk_of(item: Item) -> tuple:
    """What one decode task should read at once for this item: its table chunk (file, row group or
    record batch), or the item alone (an audio file, a tar member: read where they sit)."""
    if not item.locator:
        return ()
    where = json.loads(item.locator)
    if "offset" in where:
        return ()
    return (item.path, where.get("row_group", where.get("batch", -1)))


def decode_tasks(items: list[Item], decode_files: int) -> list[list[Item]]:
    """Items in groups for one decode task each, in the order given: up to ``decode_files`` items
    read alone, or up to ``CHUNK_TASK_FACTOR`` times that of the rows of one Parquet row group or
    Arrow batch, so a task reads its table chunk once."""
    tasks: list[list[Item]] = []
    for key, group in itertools.groupby(items, key=chunk_of):
        members = list(group)
        size = decode_files if not key else decode_files * CHUNK_TASK_FACTOR
        tasks += [members[i : i + size] for i in range(0, len(members), size)]
    return tasks
