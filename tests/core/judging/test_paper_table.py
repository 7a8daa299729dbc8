"""The README's tokenizer table on a folder (core.judging.paper_table): our columns name their
models, the published rows stand in a table of their own, and the means are the files' means."""

from __future__ import annotations

import pytest

from core.judging import paper_table


def _files():
    return [
        {"reconstruction": {"PESQ-WB": 1.0, "PESQ-NB": 1.5, "STOI": 0.4, "DistillMOS": 1.2, "SIM-GE2E": 0.5}},
        {
            "reconstruction": {"PESQ-WB": 2.0, "PESQ-NB": None, "STOI": 0.6, "DistillMOS": 1.4, "SIM-GE2E": 0.7},
            "amr": {"PESQ-WB": 2.5, "PESQ-NB": 3.0, "STOI": 0.9, "DistillMOS": 2.0, "SIM-GE2E": 0.85},
        },
    ]


def test_rows_are_means_over_the_files_that_have_each_value():
    labels = {"reconstruction": ("codec", 2200.0), "amr": ("Phone call", 12200.0)}
    codec, amr = paper_table.rows(_files(), labels)
    columns = paper_table.header()
    assert codec[: columns.index("PESQ_WB")] == ["codec", 16, 2048, 12.5, "24"]  # output kHz: 24 unless said
    assert codec[columns.index("PESQ_WB")] == pytest.approx(1.5)
    assert codec[columns.index("PESQ_NB")] == pytest.approx(1.5)  # the file without one is left out
    assert codec[columns.index("SIM (GE2E)")] == pytest.approx(0.6)
    assert codec[columns.index("dWER")] is None and codec[columns.index("files")] == 2
    assert amr[1:4] == ["—", "—", "—"] and amr[columns.index("files")] == 1


def test_the_output_rate_column_says_what_each_decoder_wrote():
    files = [{"reconstruction": {"PESQ-WB": 1.0, "output_rate_hz": 48_000}, "compare": {"output_rate_hz": 24_000}}]
    labels = {"reconstruction": ("codec", 2200.0), "compare": ("second", 2200.0)}
    codec, second = paper_table.rows(files, labels)
    at = paper_table.header().index("output kHz")
    assert (codec[at], second[at]) == ("48", "24")


def test_every_column_names_its_model_and_the_published_rows_stay_apart():
    text = paper_table.markdown(paper_table.rows(_files(), {"reconstruction": ("codec", 2200.0)}), True, 2)
    ours, published = text.split("## Published")
    assert "Random weights" in ours
    assert "MOS (DistillMOS)" in ours and "SIM (GE2E)" in ours and "not UTMOS" in ours and "not WavLM" in ours
    assert "UTMOS" in published and "SIM (WavLM)" in published and "LibriSpeech test-clean" in published
    assert "| Qwen3-TTS-Tokenizer-12Hz | 16 | 2048 | 12.5 | 3.21 | 3.68 | 0.96 | 4.16 | 0.95 |" in published
    assert "3.21" not in ours


def test_the_chosen_models_head_their_own_columns_never_one_with_another_models_numbers():
    from core.analysis.judges import Judges

    files = [{"reconstruction": {"SIM-GE2E": 0.9, "SIM-WavLM": 0.7, "dWER-Whisper": 0.25}}]
    wavlm = Judges(speaker="/models/wavlm-sv", asr="/models/whisper")
    head = paper_table.header(wavlm)
    assert "SIM (WavLM)" in head and "SIM (GE2E)" not in head and "dWER (Whisper)" in head
    (codec,) = paper_table.rows(files, {"reconstruction": ("codec", 2200.0)}, wavlm)
    assert codec[head.index("SIM (WavLM)")] == pytest.approx(0.7)  # WavLM's number, not GE2E's 0.9
    assert codec[head.index("dWER (Whisper)")] == pytest.approx(0.25)
    text = paper_table.markdown([codec], True, 1, wavlm)
    assert (
        "- SIM (WavLM): WavLM x-vector (/models/wavlm-sv)" in text
        and "- dWER (Whisper): Whisper (/models/whisper)" in text
    )
    (default,) = paper_table.rows(files, {"reconstruction": ("codec", 2200.0)})
    assert default[paper_table.header().index("SIM (GE2E)")] == pytest.approx(0.9)
