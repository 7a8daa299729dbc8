"""core.nn.batching: padded batches whose codes equal lone encodes, whole or in front-end windows;
and the planner's batch groups that bound the padded samples a batch holds."""

import numpy as np
import pytest
import torch

from core.model import planner
from core.nn import batching
from core.nn.encoding import conv_context_samples

# lengths with partial last frames, odd 25 Hz step counts (the downsample's replicate padding) and ties
SECONDS = (1.2, 2.5, 0.7, 0.33, 1.9999, 2.5, 0.08, 3.7)
# Batched and lone convolutions round fp32 differently on some CPUs (oneDNN/AMX): one near-tie frame may
# flip in a whole comparison (main saw this for offloaded keys/values). Without the padding rule every
# shorter clip with a partial last frame differs (5 of these 8), so at most one differing frame still fails.
NEAR_TIE_FRAMES = 1


def differing_frames(pairs) -> int:
    total = 0
    for many, one in pairs:
        assert many.shape == one.shape
        total += int((np.asarray(many) != np.asarray(one)).any(axis=1).sum())
    return total


@pytest.mark.parametrize("window_s", [None, 1.0, 0.4])
def test_batched_codes_equal_lone_encodes_every_frame(tiny_engine, speech, window_s):
    clips = [speech(s, seed=i) for i, s in enumerate(SECONDS)]
    lone = [tiny_engine.encode_array(c).codes for c in clips]
    window = None if window_s is None else int(window_s * 24_000)
    with torch.inference_mode():
        batched = batching.encode_batch(tiny_engine.model, [torch.from_numpy(c) for c in clips], window)
    assert differing_frames((many.numpy(), one) for many, one in zip(batched, lone, strict=True)) <= NEAR_TIE_FRAMES


def test_without_the_padding_rule_a_short_clips_last_frame_changes(tiny_engine, speech):
    """The reason core.nn.batching exists: a plain padded batch changes a short clip's last frame."""
    from core.nn.encoding import encode_batch as plain

    clips = [speech(0.33, seed=3), speech(2.0, seed=4)]
    with torch.inference_mode():
        codes = plain(tiny_engine.model, [torch.from_numpy(c) for c in clips])[0].numpy()
    lone = tiny_engine.encode_array(clips[0]).codes
    np.testing.assert_array_equal(codes[:-1], lone[:-1])
    assert not np.array_equal(codes[-1], lone[-1])


def test_batch_groups_keep_every_clip_once_within_the_budget():
    sizes = [int(s * 24_000) for s in np.random.default_rng(0).uniform(0.5, 20, 100)]
    budget, context = 60 * 24_000, 5760
    groups = planner.batch_groups(list(range(100)), sizes, budget, context)
    assert sorted(i for g, _ in groups for i in g) == list(range(100))
    for group, window in groups:
        members = [sizes[i] for i in group]
        assert planner.batch_footprint(members, window, context) <= budget
        assert window is None or (window >= 24_000 and window % 1920 == 0)
    assert len(groups[0][0]) > 5  # 20 s clips: a whole group in windows, not 3 clips per call


def test_the_engine_batch_path_uses_windows_and_stays_exact(tiny_checkpoint, speech):
    from types import SimpleNamespace

    from core.model.engine import Engine
    from core.settings import Settings

    engine = Engine(Settings(model=str(tiny_checkpoint), device="cpu", batch_audio_s=6.0))
    assert engine.load(), engine.error
    clips = [speech(s, seed=i) for i, s in enumerate(SECONDS)]
    sizes = [c.size for c in clips]
    groups = planner.batch_groups(list(range(len(clips))), sizes, 6 * 24_000, conv_context_samples(engine.model))
    assert any(window is not None for _, window in groups)  # the settings make this job windowed
    batched = engine.encode_batch([SimpleNamespace(samples=c) for c in clips])
    pairs = [(result.codes, engine.encode_array(clip).codes) for clip, result in zip(clips, batched, strict=True)]
    assert differing_frames(pairs) <= NEAR_TIE_FRAMES


def test_every_window_after_the_first_has_one_shape(tiny_engine, speech):
    """cuDNN picks a plan per input shape: an odd-length tail window drew an FFT plan with a ≈75 GiB
    workspace in strict fp32 on an H200 (bench/results/tokenize_bench-strict-run1.md). The batch is
    padded to whole windows, so the front-end sees one shape after the first window."""
    shapes = []
    seanet = tiny_engine.model.encoder.encoder
    handle = seanet.register_forward_pre_hook(lambda module, args: shapes.append(tuple(args[0].shape)))
    clips = [speech(s, seed=i) for i, s in enumerate(SECONDS)]
    try:
        with torch.inference_mode():
            batching.encode_batch(tiny_engine.model, [torch.from_numpy(c) for c in clips], 24_000)
    finally:
        handle.remove()
    assert len(shapes) > 2 and len(set(shapes[1:])) == 1
