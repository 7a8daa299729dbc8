"""The fine-tuning audit (core.dataset.audit): a stratified sample, round-tripped, in the card; the
tokenized output is not touched."""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile

from core.dataset import audit
from core.dataset.inputs import read_inputs
from core.dataset.rows import Item


def _item(index: int, speaker: str | None) -> Item:
    extra = json.dumps({"speaker": speaker} if speaker else {})
    return Item(index, f"{index}.wav", f"/x/{index}.wav", extra)


def test_the_sample_takes_speakers_in_turn_and_else_spreads_over_the_input():
    items = tuple(_item(i, "a" if i < 8 else "b") for i in range(10))
    chosen = audit.sample(items, 4)
    assert sorted(audit.speaker_of(i) for i in chosen) == ["a", "a", "b", "b"]
    plain = tuple(_item(i, None) for i in range(10))
    assert [i.index for i in audit.sample(plain, 3)] == [0, 4, 9]  # np.linspace(0, 9, 3), rounded
    assert audit.sample(plain, 0) == []


def test_edge_silence_is_measured_in_seconds():
    x = np.concatenate([np.zeros(24_000), 0.3 * np.ones(24_000), np.zeros(12_000)]).astype(np.float32)
    lead, trail = audit._edge_silence_s(x)
    assert abs(lead - 1.0) < 0.02 and abs(trail - 0.5) < 0.02


@pytest.mark.slow  # three round trips and GE2E
def test_an_audit_round_trips_the_sample_and_writes_the_card_section(tmp_path, tiny_engine):
    from tests.core.analysis import voices

    folder = tmp_path / "in"
    folder.mkdir()
    for i, voice in enumerate(voices.VOICES[:2]):
        soundfile.write(folder / f"{i}.wav", voices.espeak(voices.SENTENCES[0], voice), 24_000)
    soundfile.write(folder / "loud.wav", np.clip(3 * voices.espeak(voices.SENTENCES[1]), -1, 1), 16_000)
    report = audit.audit(read_inputs(folder), tiny_engine, 3)
    assert report["sampled"] == 3 and not report["failed"]
    assert report["resampled"] == 1 and report["sample_rates"] == {16_000: 1, 24_000: 2}
    assert report["clipped_clips"] == 1
    assert report["speakers"]["(no speaker column)"]["clips"] == 3
    assert report["speakers"]["(no speaker column)"]["worst"] < 0.95  # random weights change the voice
    text = audit.card_section(report)
    assert "random weights" in text and "GE2E" in text and "Token budget" in text
