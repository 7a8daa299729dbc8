"""The source catalogue (core.judging.sources.entry): every source id has a kind, a short label, a
locale key and a familiarity rank; the words the page showed before are kept; an anchor nobody
labelled or ranked still gets an entry."""

from __future__ import annotations

import dataclasses

from core import anchors
from core.codec import NUM_CODEBOOKS
from core.judging import sources

# what the round trip's checkboxes and the blind test's B showed before the catalogue (webui/tabs/compare.py)
SHOWN_BEFORE = {
    "lp3.5": "LP 3.5 kHz",
    "lp7": "LP 7 kHz",
    "amr": "☎ AMR-NB 12.2 kbit/s",
    "opus6": "Opus 6 kbit/s",
    "opus12": "Opus 12 kbit/s",
    "mp3": "MP3 32 kbit/s",
}


def test_every_source_kind_has_an_entry():
    ids = ["original", "reconstruction", "residual", "compare", *(f"k{k}" for k in range(1, NUM_CODEBOOKS + 1))]
    ids += [a.id for a in anchors.ANCHORS]
    kinds = {sources.entry(i).kind for i in ids}
    assert kinds == {
        sources.ORIGINAL,
        sources.CODEC,
        sources.RESIDUAL,
        sources.CHECKPOINT,
        sources.LEVEL,
        sources.ANCHOR,
    }
    for i in ids:
        e = sources.entry(i)
        assert e.id == i and e.short and e.key.startswith(("compare.source.", "lab.source."))
    assert sources.entry("k4").short == "k = 4" and sources.entry("k17").kind == sources.ANCHOR  # no 17th codebook


def test_the_short_labels_are_those_the_page_showed():
    assert {a_id: sources.short_label(a_id) for a_id in SHOWN_BEFORE} == SHOWN_BEFORE
    assert all(sources.short_label(a.id) for a in anchors.ANCHORS)  # a new anchor: its own row's words
    assert sources.short_label(sources.COMPARE_ID) == "② 2.2 kbit/s"


def test_the_best_known_reference_codec_comes_first():
    known = ["opus6", "amr", "mp3", "opus12", "lp7", "lp3.5"]  # a new anchor takes the place its rank gives
    assert [i for i in sources.familiar_first(a.id for a in anchors.ANCHORS) if i in known] == known
    assert sources.familiar_first(["lp3.5", "new", "amr"]) == ["amr", "lp3.5", "new"]  # unranked last


def test_an_anchor_without_a_label_or_rank_still_has_an_entry(monkeypatch):
    bare = dataclasses.replace(anchors.ANCHORS[0], id="g711", label="", short="", familiarity=0)
    monkeypatch.setitem(anchors.BY_ID, "g711", bare)
    e = sources.entry("g711")
    assert (e.short, e.kind, e.key, e.familiarity) == ("g711", sources.ANCHOR, "compare.source.g711", 0)
    assert sources.entry("unheard-of").short == "unheard-of"
