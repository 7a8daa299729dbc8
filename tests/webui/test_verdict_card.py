"""The verdict card (webui.views.verdict_card) and its first look (ReviewHandlers.preliminary): a
light by CSS, a sentence, one to three plain reasons, the numbers one click away, which audio the
listener-score model heard, an estimate before the verdict; in English and in Chinese."""

from __future__ import annotations

import re

import soundfile as sf

from tests.webui.english import english_sentences
from webui.tabs.review import ReviewHandlers
from webui.views import verdict_card

AMBER = {  # PESQ-WB amber, STOI green, a MOS drop of 0.7: amber
    "level": "amber",
    "mos_original": 4.0,
    "mos_reconstruction": 3.3,
    "caveat": "",
    "seconds": 2.5,
    "windows": [[0.0, 7.68], [100.0, 107.68]],
}
METRICS = {"PESQ-WB": 2.6, "STOI": 0.95}


def _words(card: str) -> str:
    return re.sub(r"<[^>]+>", " ", card)


def test_the_final_card_says_it_in_words_and_keeps_the_numbers_folded():
    card = verdict_card.final(AMBER, METRICS, verdict_card.judged_words(AMBER, 600.0, "en"), "en")
    assert "data-level='amber'" in card and "data-state='final'" in card and "🟠" not in card
    assert "Noticeably degraded" in card and "Listeners would notice the codec" in card
    reasons = re.findall(r"<li>([^<]+)</li>", card)
    assert 1 <= len(reasons) <= 3 and "Speech stays as easy to understand as the original." in reasons
    assert "PESQ-WB" not in "".join(reasons)  # the reasons are words; the numbers are behind the summary
    numbers = card[card.index("<details") :]
    assert "2.60" in numbers and "0.95" in numbers and "0.70" in numbers  # PESQ-WB, STOI, the MOS drop
    assert "2 windows of 7.68 s starting at 0:00.0, 1:40.0 (of 10:00.0)" in numbers


def test_the_card_in_chinese_has_no_english_sentence():
    for card in (
        verdict_card.final(AMBER, METRICS, verdict_card.judged_words(AMBER, 600.0, "zh-CN"), "zh-CN"),
        verdict_card.preliminary(METRICS, 12.4, verdict_card.judged_words(None, 9.0, "zh-CN"), "zh-CN", True),
        verdict_card.measuring("zh-CN", True),
    ):
        assert english_sentences(_words(card)) == [], _words(card)


def test_a_clip_no_measure_could_judge():
    card = verdict_card.final({"level": "unknown"}, {}, verdict_card.judged_words(None, 0.2, "en"), "en")
    assert "data-level='unknown'" in card and "Cannot judge" in card
    assert card.count("Cannot judge") == 1  # said once, in the title (issue 29: twice on a silent clip)


def test_the_first_look_comes_with_an_estimate_from_the_last_verdict(engine, tmp_path, speech):
    reviewer = ReviewHandlers(engine, None)  # type: ignore[arg-type]  # no request folder is needed here
    path = tmp_path / "clip.wav"
    sf.write(path, speech(4.0), 24_000)
    metrics = {"metrics": [{"name": "PESQ-WB", "value": 1.2}, {"name": "STOI", "value": 0.97}]}
    reviewer.pace[0] = 0.5  # s of DistillMOS per s of audio heard, as the last verdict measured it
    card = reviewer.preliminary(str(path), metrics)
    assert "data-state='preliminary'" in card and "data-level='red'" in card  # PESQ-WB 1.2 is red
    assert "the whole clip (0:04.0)" in card and "in about 4 s" in card  # 2 clips x 4 s x 0.5


def test_the_card_renders_the_verdicts_lights_and_judges_nothing_itself():
    # core's lights say red for STOI although its value would be green: the card shows core's light
    v = AMBER | {"level": "red", "values": {"STOI": 0.95, "PESQ-WB": 2.6, "MOS drop": 0.7}, "lights": {"STOI": "red"}}
    card = verdict_card.final(v, METRICS, verdict_card.judged_words(v, 600.0, "en"), "en")
    reasons = re.findall(r"<li>([^<]+)</li>", card)
    assert reasons == ["Speech is clearly harder to understand than the original."]
    assert "data-level='red'" in card


TABLE = {  # the table of every source as webui.jobs.compare sends it (SourceTable.to_dict())
    "table": {
        "rows": ["PESQ-WB", "STOI", "SIM-GE2E"],
        "columns": [
            {"source": {"id": "original", "kind": "original", "label": "Original"}, "values": {}},
            {"source": {"id": "reconstruction", "kind": "codec", "label": "c"}, "values": {"SIM-GE2E": 0.97}},
            {"source": {"id": "amr", "kind": "anchor", "label": "AMR"}, "values": {"SIM-GE2E": 0.81, "STOI": 0.9}},
            {"source": {"id": "lp3.5", "kind": "anchor", "label": "LP"}, "values": {"SIM-GE2E": None}},
        ],
    }
}


def test_same_voice_is_said_in_words_on_its_own_line_with_the_anchors_beside_its_number():
    v = AMBER | {"values": {"PESQ-WB": 2.6, "STOI": 0.95, "MOS drop": 0.7, "SIM-GE2E": 0.97}}
    v["lights"] = {"PESQ-WB": "amber", "STOI": "green", "MOS drop": "amber", "SIM-GE2E": "green"}
    metrics = METRICS | {"SIM-GE2E": 0.97}
    card = verdict_card.final(v, metrics, "", "en", anchors=verdict_card.beside(TABLE, "en"))
    assert "data-metric='SIM-GE2E'>It sounds like the same speaker.</p>" in card  # not one of three reasons
    assert len(re.findall(r"<li>([^<]+)</li>", card)) == 3 and "same speaker" not in "".join(re.findall("<li>.*", card))
    numbers = card[card.index("<details") :]
    assert "0.97" in numbers and "green from 0.95, red below 0.75" in numbers  # the number, one click away
    assert "Anchors on this clip: Phone call (AMR-NB 12.2 kbit/s): 0.81" in numbers  # the anchor beside it
    assert numbers.index("data-metric='SIM-GE2E'") < numbers.index("data-beside='SIM-GE2E'")
    assert "0.90" in numbers[numbers.index("data-beside='STOI'") :]  # every signal gets its anchors
    red = verdict_card.final(v | {"lights": v["lights"] | {"SIM-GE2E": "amber"}}, metrics, "", "en")
    assert "The voice changes noticeably." in red
    zh = verdict_card.final(v, metrics, "", "zh-CN", anchors=verdict_card.beside(TABLE, "zh-CN"))
    assert "听起来是同一个说话人。" in zh and "本片段上的参照编解码器" in zh
    assert english_sentences(_words(zh)) == [], _words(zh)


def test_a_wavlm_number_is_shown_under_its_own_name_without_a_light():
    v = AMBER | {"values": {"PESQ-WB": 2.6, "STOI": 0.95, "MOS drop": 0.7, "SIM-GE2E": None}}
    v["lights"] = {"PESQ-WB": "amber", "STOI": "green", "MOS drop": "amber"}
    card = verdict_card.final(v, METRICS | {"SIM-WavLM": 0.42}, "", "en")
    numbers = card[card.index("<details") :]
    row = numbers[numbers.index("data-metric='SIM-WavLM'") :].split("</tr>")[0]
    assert "WavLM x-vector" in row and "0.42" in row and "no bounds" in row and "no light" in row
    assert "cw-card-alone" not in card  # GE2E did not run: no sentence about the voice from a number without bounds
    plain = verdict_card.final(AMBER, METRICS, "", "en")
    assert "SIM-WavLM" not in plain  # a model that was not chosen has no row
