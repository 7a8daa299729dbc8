"""The doctor's judging-models check: it passes only when the speaker encoder loads and answers."""

from __future__ import annotations

from core.doctor.findings import FAIL, PASS
from core.doctor.judges import check_judging_models, try_speaker_model


def test_the_speaker_model_loads_here_and_the_check_passes():
    label, value, error = try_speaker_model()
    assert error is None and label.startswith("GE2E (resemblyzer ")
    assert check_judging_models(label, value, error).status == PASS


def test_a_model_that_does_not_load_or_answers_noise_fails_with_a_fix():
    missing = check_judging_models(None, None, "ModuleNotFoundError: No module named 'resemblyzer'")
    assert missing.status == FAIL and "resemblyzer" in missing.evidence and "requirements-judging" in missing.fix
    assert check_judging_models("GE2E", 0.42, None).status == FAIL
