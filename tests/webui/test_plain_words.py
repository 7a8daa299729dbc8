"""Words as a user reads them: the second checkpoint named by its folder, the
Evaluate tab's table in words (no ``mos_original``, no "red", no errno), core's `commands` quoted
in a toast rather than shown with raw backticks."""

from __future__ import annotations

from webui.common import _plain
from webui.tabs.evaluate import _cell, _heading
from webui.views.compare_view import source_label


def test_the_second_checkpoint_is_named_by_its_folder():
    named = source_label({"id": "compare", "kind": "checkpoint", "label": "ckpt-finetuned", "bitrate_bps": 2200}, "en")
    assert "ckpt-finetuned" in named and "Second checkpoint" in named
    plain = source_label({"id": "compare", "kind": "checkpoint", "label": "second checkpoint 2.2 kbit/s"}, "en")
    assert plain == "Second checkpoint (2.2 kbit/s)"


def test_the_evaluate_table_is_in_words():
    assert _heading("mos_original", "en") == "DistillMOS of the original"
    assert _heading("verdict", "zh-CN") == "结论"
    assert _cell("verdict", "red", "en") == "Badly degraded"
    error = "InvalidDataError: [Errno 1094995529] Invalid data found when processing input: 'x.wav'"
    assert "Errno" not in _cell("error", error, "en") and "Invalid data found" in _cell("error", error, "en")
    assert _cell("PESQ-WB", 1.23456, "en") == 1.23


def test_a_toast_quotes_commands_instead_of_showing_backticks():
    said = _plain("run `python -m core build-checkpoint --tiny DIR` first")
    assert "`" not in said and "“python -m core build-checkpoint --tiny DIR”" in said
