"""The round trip's follow-up events (metrics, verdict, where the codec stands, report) read the
result's record by its id (webui.jobs.results), as the page sends them: Gradio's copies of the two
WAVs, the round trip's details, the metrics JSON. Decodes are counted where every audio read goes
(``core.audio.files``): the follow-ups read the WAVs at most once (the record holds the samples the
round trip wrote: none at all here); they read each WAV four times before (metrics, verdict, the
report's verdict check and its figures)."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

from core.audio import files
from webui.jobs import results
from webui.tabs.review import ReviewHandlers


@pytest.fixture
def decodes(monkeypatch) -> list[str]:
    """The names of the files decoded from now on (every load_audio of a WAV passes here)."""
    read: list[str] = []
    real = files.load_with_soundfile

    def counted(path, limits):
        read.append(Path(path).name)
        return real(path, limits)

    monkeypatch.setattr(files, "load_with_soundfile", counted)
    return read


def _gradio_copy(path: str, root: Path) -> str:
    """What Gradio hands the next event: a copy of the output under its cache, byte for byte."""
    copy = root / f"{abs(hash(path))}" / Path(path).name
    copy.parent.mkdir(parents=True)
    shutil.copyfile(path, copy)
    return str(copy)


def test_the_follow_up_events_read_the_record_not_the_wavs(tabs, clip, tmp_path, decodes):
    trip = tabs.roundtrip.roundtrip(str(clip))
    details = trip.details
    record = results.find(tabs.engine, details)
    assert record is not None and record.result_id == details[results.ID_KEY] == Path(trip.original).parent.name
    original, reconstruction = _gradio_copy(trip.original, tmp_path), _gradio_copy(trip.reconstruction, tmp_path)
    decodes.clear()  # the round trip read its input; from here on only the follow-ups

    _markdown, measured = tabs.roundtrip.metrics(original, reconstruction, None, details)
    reviewer = ReviewHandlers(tabs.engine, tabs.workspace)
    _card, judged = reviewer.verdict(original, reconstruction, measured, None)
    assert reviewer.placing_card(original, reconstruction, None, details) is not None
    zip_path, _html = reviewer.report(original, reconstruction, trip.downloads, details, measured, judged, None)

    ours = [name for name in decodes if name in {Path(trip.original).name, Path(trip.reconstruction).name}]
    assert len(ours) <= 2, f"the follow-ups decoded the round trip's WAVs {len(ours)} times: {ours}"
    assert record.decodes == 0 and results.recall(record, "verdict") == judged
    assert results.recall(record, "metrics")["metrics"] == measured["metrics"]
    with zipfile.ZipFile(zip_path) as z:
        assert Path(trip.original).name in z.namelist()  # the record's own WAVs in the report


def test_without_a_record_the_two_files_are_measured(tabs, clip, tmp_path, decodes):
    """An API call with any two clips (no result id, not the server's own files) reads both once."""
    trip = tabs.roundtrip.roundtrip(str(clip))
    original, reconstruction = _gradio_copy(trip.original, tmp_path), _gradio_copy(trip.reconstruction, tmp_path)
    decodes.clear()
    _markdown, measured = tabs.roundtrip.metrics(original, reconstruction, None, None)
    assert results.ID_KEY not in measured and sorted(decodes) == sorted(
        Path(p).name for p in (original, reconstruction)
    )
    with_record = tabs.roundtrip.metrics(original, reconstruction, None, trip.details)[1]
    assert with_record["metrics"] == measured["metrics"]  # the record's samples are the files' samples
