"""Where a tokenize job's work runs and in what order its items go: CPU shares that always hold the
actors and one decode task (or a refusal in words), length order within windows of whole shards that
keeps every item exactly once, and what a stalled job says it waits for."""

from __future__ import annotations

import json
import logging
import time

import pytest

from core.dataset.layout import DECODE_TASK_CPUS, GPU_BATCH_AUDIO_S, GPU_BATCH_FILES, fit_cpus, plan_layout
from core.dataset.order import decode_tasks, in_length_order, size_hint, window_files
from core.dataset.rows import Item
from core.dataset.stall import StallWatch, waiting_for
from core.errors import CodecError
from core.settings import Settings


def test_cpus_that_hold_actors_and_a_decode_task_are_kept_as_asked():
    assert fit_cpus(16, 1, 1.0) == (1.0, DECODE_TASK_CPUS)
    assert fit_cpus(2, 1, 1.0) == (1.0, 1.0)


@pytest.mark.parametrize(("cpus", "actors", "each"), [(1, 1, 1.0), (2, 2, 1.0), (3, 1, 4.0), (1.5, 3, 1.0)])
def test_too_few_cpus_are_shared_so_actors_and_one_decode_task_fit_at_once(cpus, actors, each, caplog):
    with caplog.at_level(logging.WARNING, logger="core.dataset.layout"):
        actor, decode = fit_cpus(cpus, actors, each)
    assert 0 < actor <= each and 0 < decode <= DECODE_TASK_CPUS
    assert actors * actor + decode <= cpus + 1e-9  # Ray can place all of them at once: nothing waits for ever
    assert "--num-cpus" in caplog.text and "share" in caplog.text


def test_a_cluster_that_cannot_hold_even_small_shares_is_refused_in_words():
    with pytest.raises(CodecError, match=r"1 CPU\(s\): too few to hold 20 encode actor\(s\).*--num-cpus.*--actors"):
        fit_cpus(1, 20, 1.0)
    with pytest.raises(CodecError, match="0 CPU"):
        fit_cpus(0, 1, 1.0)


def test_gpu_layout_one_actor_per_gpu_with_large_calls(tiny_checkpoint):
    settings = Settings(model=str(tiny_checkpoint), device="cuda:3")
    layout = plan_layout({"CPU": 16.0, "GPU": 2.0}, settings, None, None, None)
    assert (layout.actors, layout.gpus_per_actor, layout.cpus_per_actor) == (2, 1, 1.0)
    assert layout.batch_files == GPU_BATCH_FILES and layout.settings.device == "cuda:0"
    assert layout.settings.batch_audio_s == GPU_BATCH_AUDIO_S
    chosen = plan_layout(
        {"CPU": 16.0, "GPU": 1.0}, Settings(model="m", device="cuda:0", batch_audio_s=30.0), 1, None, None
    )
    assert chosen.settings.batch_audio_s == 30.0  # the user's bound on memory stays
    with pytest.raises(CodecError, match="has none"):
        plan_layout({"CPU": 16.0}, settings, None, None, None)
    one_cpu = plan_layout({"CPU": 1.0, "GPU": 1.0}, settings, None, None, 8)
    assert one_cpu.cpus_per_actor + one_cpu.decode_cpus <= 1.0 and one_cpu.batch_files == 8


def test_cpu_layout_gives_the_model_every_cpu(tiny_checkpoint):
    settings = Settings(model=str(tiny_checkpoint), device="cpu")
    layout = plan_layout({"CPU": 2.0}, settings, None, None, None)
    assert (layout.actors, layout.gpus_per_actor, layout.torch_threads) == (1, 0, 2)
    assert layout.cpus_per_actor + layout.decode_cpus <= 2.0
    single = plan_layout({"CPU": 1.0}, settings, None, None, None)
    assert single.cpus_per_actor + single.decode_cpus <= 1.0 and single.torch_threads == 1


def _files(tmp_path, sizes: list[int]) -> list[Item]:
    items = []
    for i, size in enumerate(sizes):
        path = tmp_path / f"f{i:03d}.wav"
        path.write_bytes(b"x" * size)
        items.append(Item(i, path.name, str(path), "{}"))
    return items


def test_length_order_sorts_within_windows_of_whole_shards_and_keeps_every_item_once(tmp_path):
    sizes = [(i * 37) % 101 + 1 for i in range(40)]
    items = _files(tmp_path, sizes)
    assert window_files(shard_size=4, batch_files=2) == 16
    ordered = in_length_order(items, shard_size=4, batch_files=2)
    assert sorted(i.index for i in ordered) == list(range(40))
    for start in (0, 16, 32):  # each window holds the same items, longest first
        window = ordered[start : start + 16]
        assert {i.index for i in window} == set(range(start, min(start + 16, 40)))
        lengths = [sizes[i.index] for i in window]
        assert lengths == sorted(lengths, reverse=True)
    assert [i.index for i in ordered] != list(range(40))  # the order did change


def test_items_without_a_size_keep_their_order_and_table_chunks_stay_together(tmp_path):
    files = _files(tmp_path, [5, 50, 20])
    cells = [
        Item(3 + k, f"t{k}", "/data/t.parquet", "{}", json.dumps({"row_group": k // 3, "row": k % 3})) for k in range(6)
    ]
    tar = [
        Item(9 + k, f"m{k}", "/data/s.tar", "{}", json.dumps({"offset": 512 * k, "size": 100 * (k + 1), "member": "m"}))
        for k in range(3)
    ]
    missing = Item(12, "gone.wav", str(tmp_path / "gone.wav"), "{}")
    items = files + cells + tar + [missing]
    assert size_hint(cells[0]) is None and size_hint(tar[2]) == 300 and size_hint(missing) is None
    ordered = in_length_order(items, shard_size=64, batch_files=8)
    assert [i.index for i in ordered] == [11, 10, 9, 1, 2, 0, 3, 4, 5, 6, 7, 8, 12]
    tasks = decode_tasks(ordered, decode_files=2)
    assert [[i.index for i in t] for t in tasks] == [[11, 10], [9, 1], [2, 0], [3, 4, 5], [6, 7, 8], [12]]


def test_what_a_job_waits_for_names_the_missing_resource(tiny_checkpoint):
    layout = plan_layout(
        {"CPU": 2.0, "GPU": 1.0}, Settings(model=str(tiny_checkpoint), device="cuda:0"), None, None, None
    )
    said = waiting_for(layout, {"CPU": 2.0, "GPU": 1.0}, {"CPU": 0.0, "GPU": 1.0}, 0)
    assert "no CPU free for a decode task" in said and "2 of 2 held" in said
    assert "the encode actors to be placed: each needs 1 GPU and 1 CPU; 1 GPU and 0 CPU free" in said
    two = plan_layout({"CPU": 4.0, "GPU": 2.0}, Settings(model=str(tiny_checkpoint), device="cuda:0"), None, None, None)
    node_gone = waiting_for(two, {"CPU": 4.0, "GPU": 1.0}, {"CPU": 3.0, "GPU": 0.0}, 5)  # a GPU node left
    assert "GPUs for the encode actors: 2 needed, 0 of 1 free" in node_gone
    starting = waiting_for(layout, {"CPU": 2.0, "GPU": 1.0}, {"CPU": 1.0, "GPU": 0.0}, 0)
    assert "still starting" in starting


def test_stall_watch_speaks_once_quiet_for_long_enough_and_not_while_results_come(caplog):
    with caplog.at_level(logging.WARNING, logger="core.dataset.stall"):
        with StallWatch(lambda n: f"the thing after {n}", after_s=0.6) as watch:
            for _ in range(6):  # a result every 0.2 s: never quiet for 0.6 s
                time.sleep(0.2)
                watch.seen()
            assert watch.said == []
            time.sleep(1.5)
        assert watch.said and "waiting for the thing after 6" in watch.said[0]
        assert "no result for" in caplog.text
