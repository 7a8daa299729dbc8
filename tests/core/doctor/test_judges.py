"""The doctor's judging-models check: it passes only when every chosen model loads and answers."""

from __future__ import annotations

import pytest

from core.analysis.judges import Judges
from core.doctor.findings import FAIL, PASS
from core.doctor.judges import Seen, check_judging_models, try_judging_models


def test_the_default_speaker_model_loads_here_and_the_check_passes():
    seen = try_judging_models()
    assert [s.role for s in seen] == ["speaker model"]  # no ASR is chosen by default
    assert seen[0].error is None and seen[0].label.startswith("GE2E (resemblyzer ")
    assert check_judging_models(seen).status == PASS


@pytest.mark.slow
def test_a_chosen_wavlm_and_whisper_load_through_the_real_path_and_are_checked(tmp_path):
    from core.analysis.asr import build_random_whisper
    from core.analysis.speaker_models import build_random_wavlm

    judges = Judges(str(build_random_wavlm(tmp_path / "wavlm")), str(build_random_whisper(tmp_path / "whisper")), "en")
    seen = try_judging_models(judges)
    assert [s.role for s in seen] == ["speaker model", "ASR"] and all(s.error is None for s in seen), seen
    found = check_judging_models(seen)
    assert found.status == PASS and "WavLM x-vector" in found.evidence and "Whisper" in found.evidence
    assert "random weights" in found.evidence  # the marker is read: nothing is claimed about quality
    broken = try_judging_models(Judges(str(tmp_path / "nowhere"), "pocketsphinx"))
    failed = check_judging_models(broken)
    assert failed.status == FAIL and "nowhere" in failed.evidence and "--speaker-model" in failed.fix


def test_a_model_that_does_not_load_or_answers_noise_fails_with_a_fix():
    missing = check_judging_models([Seen("speaker model", "ge2e", None, None, "ModuleNotFoundError: resemblyzer")])
    assert missing.status == FAIL and "resemblyzer" in missing.evidence and "requirements-judging" in missing.fix
    assert check_judging_models([Seen("speaker model", "ge2e", "GE2E", 0.42, None)]).status == FAIL
    asr_failed = [Seen("speaker model", "ge2e", "GE2E", 1.0, None), Seen("ASR", "/w", None, None, "OSError: x")]
    assert check_judging_models(asr_failed).status == FAIL
