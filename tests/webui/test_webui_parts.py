"""Smaller parts: request folders, formatting, command-line options, the event wiring."""

from __future__ import annotations

import argparse
import os
import time

import pytest

from webui.__main__ import StartupError, auth_from_env, build_parser, check_port_free, options_from_args
from webui.app import build_app
from webui.jobs.codec import stem_of
from webui.options import UiOptions
from webui.queues import MODEL_GROUP
from webui.serving.workspace import Workspace
from webui.views import formatting

# --------------------------------------------------------------------------- workspace


def test_request_folders_are_fresh_and_old_ones_are_removed(tmp_path):
    ws = Workspace(tmp_path / "root", max_age_s=60)
    old, recent = ws.new_dir("a"), ws.new_dir("a")
    (old / "x.wav").write_bytes(b"1")
    stale = time.time() - 3600
    os.utime(old, (stale, stale))
    foreign = ws.root / "not-ours"
    foreign.mkdir()
    os.utime(foreign, (stale, stale))

    fresh = ws.new_dir("b")
    assert fresh not in (old, recent) and fresh.is_dir() and not any(fresh.iterdir())
    assert not old.exists() and recent.exists()
    assert foreign.exists()  # only our own request folders are deleted


def test_stems_are_safe_file_names():
    assert stem_of("/tmp/x/my clip (1).mp3") == "my_clip_1"
    assert stem_of("/tmp/x/../../etc/passwd") == "passwd"
    assert stem_of("/tmp/x/日本語.wav") == "audio"
    assert len(stem_of("a" * 500 + ".wav")) == 60


# --------------------------------------------------------------------------- formatting


STEPS = [
    {"name": "cuda", "title": "CUDA present", "status": "skipped", "detail": "no CUDA", "seconds": 0.0},
    {"name": "weights", "title": "Weights resident", "status": "fail", "detail": "<b>x</b> missing", "seconds": 0.0},
    {"name": "roundtrip", "title": "Test round trip", "status": "skipped", "detail": "no model", "seconds": 0.0},
]
INFO = {
    "state": "failed",
    "error": "Model directory /m does not exist.",
    "model": "/m",
    "model_path": None,
    "device": "cpu",
    "device_label": "CPU",
    "dtype": "float32",
    "resident_mib": None,
    "load_seconds": None,
}


def test_status_html_escapes_and_explains_failure():
    html = formatting.status_html({"ok": False, "steps": STEPS}, INFO)
    assert "&lt;b&gt;x&lt;/b&gt; missing" in html and "<b>x</b>" not in html
    assert "Not ready" in html and "Model directory /m does not exist." in html
    assert "Resident weights:</b> none" in html


def test_status_html_before_any_check_shows_three_pending_steps():
    html = formatting.status_html(None, {**INFO, "state": "unloaded", "error": None})
    assert html.count('cw-detail">not checked yet') == 3 and "cw-fix" not in html


def test_gpu_stats_and_clear_vram_before_after():
    gpu = {
        "device": "cuda:0",
        "allocated_mib": 1500.0,
        "reserved_mib": 6000.0,
        "free_mib": 70000.0,
        "total_mib": 81559.0,
    }
    stats = {
        "device": "cuda:0",
        "gpu": gpu,
        "gpu_name": "NVIDIA H100",
        "process_rss_mib": 2048.0,
        "system_ram_used_mib": 9000.0,
        "system_ram_total_mib": 64000.0,
        "system_ram_percent": 14.1,
        "cpu_percent": 37.0,
        "cpu_count": 16,
    }
    text = formatting.stats_markdown(stats)
    for expected in ("NVIDIA H100", "1500 MiB", "6000 MiB", "70000 of 81559 MiB", "2048 MiB", "37% of 16 cores"):
        assert expected in text
    after = {**gpu, "reserved_mib": 1600.0, "free_mib": 74400.0}
    text = formatting.vram_markdown({"before": gpu, "after": after})
    assert "| Reserved | 6000 MiB | 1600 MiB |" in text and "| Free | 70000 MiB | 74400 MiB |" in text


def test_metric_table_shows_missing_values_with_their_note():
    metrics = [
        {
            "name": "PESQ-WB",
            "value": None,
            "meaning": "quality",
            "better": "higher",
            "note": "the original is silent",
            "unit": "",
        },
        {"name": "SI-SDR", "value": 12.3456, "meaning": "fidelity", "better": "higher", "note": "", "unit": "dB"},
    ]
    text = formatting.metrics_markdown(metrics)
    assert "| – |" in text and "the original is silent" in text and "12.346 dB" in text


def test_facts_show_warnings_or_say_there_are_none():
    facts = {
        "name": "a|b.wav",
        "format": "wav",
        "sample_rate": 48000,
        "channels": 2,
        "duration_s": 1.5,
        "peak": 1.0,
        "rms_dbfs": -20.0,
        "clipped_samples": 12,
        "near_silent": False,
        "warnings": ["12 samples are clipped."],
    }
    text = formatting.facts_markdown(facts)
    assert "⚠ 12 samples are clipped." in text and "a\\|b.wav" in text and "0.0 dBFS" in text
    assert "No warnings" in formatting.facts_markdown({**facts, "warnings": [], "peak": 0.0})


# --------------------------------------------------------------------------- command line


def _args(argv):
    return build_parser().parse_args(argv)


def test_defaults_bind_loopback_7860_without_auth_or_urls():
    ui, server = options_from_args(_args([]), {})
    assert (server.host, server.port, server.auth) == ("127.0.0.1", 7860, None)
    assert ui.url_policy is None


def test_flags_and_environment():
    env = {
        "CODEC_HOST": "0.0.0.0",
        "CODEC_PORT": "9000",
        "CODEC_AUTH_USER": "ann",
        "CODEC_AUTH_PASSWORD": "pw",
        "CODEC_ENABLE_URL_INPUT": "1",
        "CODEC_TEMP_DIR": "/tmp/cw-x",
    }
    ui, server = options_from_args(_args(["--port", "9100", "--url-max-mb", "5"]), env)
    assert (server.host, server.port, server.auth) == ("0.0.0.0", 9100, ("ann", "pw"))
    assert ui.url_policy.max_bytes == 5 << 20 and str(ui.temp_root) == "/tmp/cw-x"
    assert options_from_args(_args(["--enable-url-input"]), {})[0].url_policy is not None


@pytest.mark.parametrize("env", [{"CODEC_AUTH_USER": "ann"}, {"CODEC_AUTH_PASSWORD": "pw"}])
def test_half_an_auth_setting_is_refused(env):
    with pytest.raises(StartupError, match="both"):
        auth_from_env(env)


def test_engine_flags_are_there():
    args = _args(["--model", "/m", "--device", "cpu", "--dtype", "float32"])
    assert isinstance(args, argparse.Namespace) and (args.model, args.device, args.dtype) == ("/m", "cpu", "float32")


# --------------------------------------------------------------------------- event wiring


def test_model_events_share_one_group_and_stats_stay_outside(engine, tmp_path):
    demo = build_app(engine, UiOptions(temp_root=tmp_path))
    events = {fn.api_name: fn for fn in demo.fns.values()}
    for name in ("roundtrip", "encode", "decode", "clear_vram", "readiness"):
        assert (events[name].concurrency_id, events[name].concurrency_limit) == (
            MODEL_GROUP["concurrency_id"],
            MODEL_GROUP["concurrency_limit"],
        ), name
    assert events["stats"].concurrency_id != "model" and events["status"].concurrency_id != "model"
    assert events["metrics"].concurrency_id == "metrics"  # CPU only: does not hold up the next model job
    assert all(fn.api_name for fn in demo.fns.values())  # every event is named
    assert "fetch_url" not in events  # URL input is off by default


def test_roundtrip_outputs_are_wired_in_the_order_the_handler_names_them(engine, tmp_path):
    from webui.tabs.roundtrip import RoundTripView

    demo = build_app(engine, UiOptions(temp_root=tmp_path))
    event = next(fn for fn in demo.fns.values() if fn.api_name == "roundtrip")
    ids = [getattr(block, "elem_id", None) for block in event.outputs]
    expected = {
        "original": "roundtrip-original",
        "reconstruction": "roundtrip-reconstruction",
        "timing": "roundtrip-timing",
        "facts": "roundtrip-facts",
        "tokens": "roundtrip-tokens",
        "spectrogram": "roundtrip-spectrogram",
        "downloads": "roundtrip-downloads",
    }
    assert ids[:-1] == [expected[name] for name in RoundTripView._fields[:-1]]
    assert len(ids) == len(RoundTripView._fields)  # the last, "details", is the raw JSON


def test_url_row_only_when_enabled(engine, tmp_path):
    from webui.serving.url_input import UrlPolicy

    demo = build_app(engine, UiOptions(temp_root=tmp_path, url_policy=UrlPolicy()))
    events = {fn.api_name: fn for fn in demo.fns.values()}
    assert events["fetch_url"].concurrency_id != "model"


def test_timing_line_shows_peak_gpu_memory_only_when_there_is_one():
    timing = {"encode_s": 1.0, "decode_s": 2.0, "model_s": 3.0, "total_s": 3.2, "ui_s": 0.2, "peak_gpu_mib": None}
    assert "GPU" not in formatting.timing_markdown(timing) and "**3.00 s**" in formatting.timing_markdown(timing)
    assert "peak GPU memory 2345 MiB" in formatting.timing_markdown({**timing, "peak_gpu_mib": 2345.4})


def test_timing_line_shows_the_engines_decode_warnings():
    timing = {"encode_s": 1.0, "decode_s": 2.0, "model_s": 3.0, "total_s": 3.2, "ui_s": 0.2, "peak_gpu_mib": None}
    assert "⚠️" not in formatting.timing_markdown({**timing, "warnings": []})
    text = formatting.timing_markdown({**timing, "warnings": ["2 of 3 decode chunk(s) came out broken <in bf16>"]})
    assert "⚠️ 2 of 3 decode chunk(s) came out broken &lt;in bf16&gt;" in text


def test_decode_warnings_reach_the_timing_the_page_formats():
    import time

    import numpy as np

    from core.model.engine import DecodeResult
    from webui.jobs import codec

    decoded = DecodeResult(np.zeros(10, np.float32), 24_000, 0.5, None, ("redone in float32",))
    assert codec._timing(time.perf_counter(), decoded=decoded)["warnings"] == ["redone in float32"]
    assert codec._timing(time.perf_counter())["warnings"] == []


def test_commands_in_the_load_error_are_shown_as_code():
    html = formatting.status_html({"ok": False, "steps": STEPS}, {**INFO, "error": "run `python -m core <x>` then"})
    assert "<code>python -m core &lt;x&gt;</code>" in html


def test_console_entry_point_resolves_to_main():
    import importlib
    import tomllib
    from pathlib import Path

    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    module, _, attr = pyproject["project"]["scripts"]["codec-workbench"].partition(":")
    main = getattr(importlib.import_module(module), attr)
    assert callable(main) and main.__module__ == "webui.__main__"


def test_a_bad_log_level_is_a_usage_error_not_a_traceback(capsys):
    from webui.__main__ import build_parser

    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["--log-level", "loud"])
    assert exit_.value.code == 2 and "--log-level" in capsys.readouterr().err
    assert build_parser().parse_args(["--log-level", "debug"]).log_level == "DEBUG"


def test_every_web_option_has_a_flag_and_a_variable():
    from core.options import specs
    from webui.options import WebOptions

    for spec in specs(WebOptions):
        assert spec.env.startswith("CODEC_") and spec.flag.startswith("--")
    ui, server = options_from_args(
        _args([]),
        {
            "CODEC_URL_MAX_MB": "3",
            "CODEC_ENABLE_URL_INPUT": "yes",
            "CODEC_URL_TIMEOUT_S": "4",
            "CODEC_KEEP_FILES_S": "60",
        },
    )
    assert ui.url_policy.max_bytes == 3 << 20 and ui.url_policy.timeout_s == 4.0 and ui.max_age_s == 60.0


def test_bad_web_options_are_refused_with_the_variable_named():
    from core.errors import SettingsError

    with pytest.raises(SettingsError, match="CODEC_PORT"):
        options_from_args(_args([]), {"CODEC_PORT": "eighty"})
    with pytest.raises(SettingsError, match="port"):
        options_from_args(_args(["--port", "70000"]), {})
    with pytest.raises(SettingsError, match="CODEC_LOG_LEVEL"):
        options_from_args(_args([]), {"CODEC_LOG_LEVEL": "loud"})


def test_check_port_free_refuses_a_taken_port_and_passes_a_free_one():
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(OSError):
            check_port_free("127.0.0.1", port)
    check_port_free("127.0.0.1", port)  # closed again: free
    check_port_free("127.0.0.1", 0)  # Gradio picks one: nothing to check
    with pytest.raises(OSError):
        check_port_free("192.0.2.1", port)  # an address this machine does not have (TEST-NET-1)
