"""A command's help shows its own options first and the engine's after, in their
own group; the source table names its units (the bitrate in kbit/s); a model that cannot be loaded
is said once; the doctor checks the port the service is configured with and does not quote an old
run's exit or error as the present one."""

from __future__ import annotations

import logging

from core.cli.main import build_parser, main
from core.doctor import gather, host
from core.judging import source_table
from core.settings import ENGINE_GROUP


def test_subcommand_help_puts_the_commands_own_options_first(capsys):
    parser, _ = build_parser()
    roundtrip = parser._subparsers._group_actions[0].choices["roundtrip"]  # noqa: SLF001 - argparse keeps them here
    text = roundtrip.format_help()
    body = text[text.index("\noptions:") :]  # past the usage line, which names every flag
    assert (
        body.index("--output-dir") < body.index("--no-mos") < body.index(f"\n{ENGINE_GROUP}:") < body.index("--model")
    )


def test_a_commands_usage_line_names_its_own_options_and_parity_has_examples():
    parser, _ = build_parser()
    parity = parser._subparsers._group_actions[0].choices["parity"]  # noqa: SLF001 - argparse keeps them here
    usage = parity.format_usage()
    assert "--report" in usage and "codes wav" in usage and usage.rstrip().endswith("[engine options]"), usage
    assert "--live-sessions" not in usage and "--model" not in usage, usage  # the engine's flags, listed below
    text = parity.format_help()
    assert "examples:\n  python -m core parity clip.npz their_decode.wav" in text
    assert text.index("--report") < text.index("--live-sessions") < text.index("examples:")


def test_the_table_names_units_and_says_the_bitrate_in_kbits():
    column = source_table.Column({"id": "codec", "label": "codec"}, {source_table.BITRATE: 2200.0, "STOI": 0.5}, {})
    text = source_table.SourceTable([column], 0.0).text()
    line = next(line for line in text.splitlines() if line.lstrip().startswith("Bitrate"))
    assert "kbit/s" in line and "2.2" in line and "2200" not in line


def test_a_missing_model_is_said_once(tmp_path, capsys, caplog):
    clip = tmp_path / "a.wav"
    clip.write_bytes(b"")
    with caplog.at_level(logging.WARNING):
        code = main(["roundtrip", str(clip), "-o", str(tmp_path / "out"), "--model", str(tmp_path / "none")])
    err = capsys.readouterr().err
    assert code == 1 and err.count("does not exist") == 1
    assert not [r for r in caplog.records if "does not exist" in r.getMessage()]


def test_the_doctor_checks_the_configured_port(tmp_path):
    (tmp_path / "supervisord.conf").write_text('environment = CODEC_HOST="127.0.0.1",CODEC_PORT="7860"\n')
    assert gather.configured_port(tmp_path) == 7860
    (tmp_path / "supervisord.local.conf").write_text('[program:webui]\nenvironment = CODEC_PORT="7931"\n')
    assert gather.configured_port(tmp_path) == 7931
    assert gather.configured_port(tmp_path / "nowhere") is None


OLD_RUN = """2026-11-20 09:00:00,000 INFO supervisord started with pid 100
2026-11-20 09:00:01,000 INFO spawned: 'webui' with pid 101
2026-11-20 10:00:00,000 WARN exited: webui (terminated by SIGKILL; not expected)
2026-12-01 08:00:00,000 INFO supervisord started with pid 200
2026-12-01 08:00:01,000 INFO spawned: 'webui' with pid 201
"""
PROGRAM_LOG = """2026-11-20 09:59:00 ERROR webui: model not loaded: old trouble
2026-12-01 08:00:02 INFO webui: startup: serving
"""


def test_the_doctor_does_not_quote_an_old_run_as_the_present():
    running = host.check_supervisor("webui   RUNNING   pid 201, uptime 1:00:00\n", None, OLD_RUN, PROGRAM_LOG)
    assert running.data["last_exit"] is None and "SIGKILL" not in running.evidence
    absent = host.check_supervisor(None, "no such file", OLD_RUN, PROGRAM_LOG)
    assert "when it last ran" in absent.evidence  # history, said as history
    later_error = PROGRAM_LOG + "2026-12-01 09:00:00 ERROR webui: a later run's error\n"
    reason = host.last_exit(OLD_RUN, later_error)
    assert "old trouble" in reason and "later run" not in reason  # the error of the run that exited
