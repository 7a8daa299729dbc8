"""Issue 19, finding 12: a damaged MP3 (valid head, corrupt body) is refused alike on every way in
that is not the page (tests/webui/test_webui_untrusted_input.py has the page): the CLI, core evaluate and
core tokenize's decode step. It was round-tripped, evaluated and tokenized as a 0.24 s clip."""

from __future__ import annotations

from core.cli.main import main
from core.dataset.decode import decode_items
from core.judging.evaluate import evaluate_one

WORDS = "header promises 1.50 s"


def test_the_cli_refuses_it(tiny_checkpoint, damaged_mp3, tmp_path, capsys):
    argv = ["roundtrip", str(damaged_mp3), "-o", str(tmp_path / "out"), "--model", str(tiny_checkpoint)]
    assert main([*argv, "--device", "cpu"]) == 1
    err = capsys.readouterr().err
    assert WORDS in err and "Traceback" not in err
    assert not list(tmp_path.rglob("*.npz"))  # nothing made of it


def test_core_evaluate_refuses_it_in_its_row(tiny_engine, damaged_mp3, tmp_path):
    (tmp_path / "out" / "reconstructions").mkdir(parents=True)
    row = evaluate_one(
        tiny_engine, damaged_mp3, damaged_mp3.name, tmp_path / "out", tiny_engine.settings.audio_limits()
    )
    assert WORDS in row["error"] and row["verdict"] is None


def test_core_tokenize_refuses_it_in_errors_jsonl(tiny_engine, damaged_mp3):
    [(audio, _sha, reason)] = list(decode_items([str(damaged_mp3)], [""], tiny_engine.settings.audio_limits()))
    assert audio is None and WORDS in reason
