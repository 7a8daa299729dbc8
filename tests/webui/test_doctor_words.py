"""The doctor's evidence and fixes in the reader's language: every check says its findings as codes
(``core.doctor.words``), the English catalogue holds the same sentences as core (one meaning), and the
System tab's panel in Chinese has no English sentence outside what is shown as code (commands, paths,
what a system said). Checked on a real run here and on the failures a support engineer meets most."""

from __future__ import annotations

import errno
import re

from core.doctor import gpu, host, judges, needs, run_doctor
from core.doctor.findings import Report, english
from core.doctor.words import ENGLISH, Said
from tests.core.doctor.test_doctor import _options
from tests.webui.english import english_sentences
from webui.i18n import catalogues
from webui.views import doctor_panel


def _failures() -> list:
    """The findings of the failures people report most, made from their facts."""
    taken = OSError(errno.EADDRINUSE, "Address already in use")
    return [
        needs.check_model("/srv/ckpt", "failed", None, "/srv/ckpt does not exist", False),
        needs.check_audio_decoders("18.1.0", {"mp3": False, "aac": True}, None),
        host.check_port("127.0.0.1", 7860, taken, None),
        host.check_folder("data_dir", "Data folder", "/srv/data", 10**12, "Permission denied", 100),
        host.check_folder("temp_dir", "Temp folder", "/tmp/x", 10 * 2**20, None, 500),
        host.check_packages({"torch": "2.11.0", "qwen-tts": "0.1.1"}, {"torch": "2.10.0", "qwen-tts": None}),
        host.check_supervisor("webui  FATAL  Exited too quickly", None, "", ""),
        host.check_cpu_decode("cpu", "bfloat16", "Some CPU", {"float32": 0.1, "bfloat16": 3.2}, 4),
        judges.check_judging_models([judges.Seen("speaker model", "ge2e", None, None, "ModuleNotFoundError: x")]),
        gpu.check_driver("cuda:0", None, None),
        gpu.check_torch(
            "cuda:1",
            {
                "torch_version": "2.11.0",
                "torch_cuda": "13.0",
                "cuda_available": True,
                "device_count": 1,
                "devices": [{"name": "H200"}],
            },
        ),
        gpu.check_memory([("30 s", {"seconds": 30, "peak_mib": 9000, "available_mib": 4000, "fits": False})]),
    ]


def test_the_english_catalogue_says_what_core_says():
    english = catalogues()["en"]
    assert {k.removeprefix("doctor.note.") for k in english if k.startswith("doctor.note.")} == set(ENGLISH)
    assert all(english[f"doctor.note.{code}"] == text for code, text in ENGLISH.items())
    assert all(f"doctor.note.{code}" in catalogues()["zh-CN"] for code in ENGLISH)


def test_every_finding_is_said_as_codes_whose_english_is_its_text(engine, tmp_path):
    report = run_doctor(engine, _options(tmp_path))
    for f in [*report.findings, *_failures()]:
        assert f.said.get("evidence"), f
        assert f.evidence == english(tuple(Said(s["code"], s["fields"]) for s in f.said["evidence"])), f
        assert bool(f.fix) == bool(f.said.get("fix")), f
        assert all("path" not in s["fields"] for s in f.said["evidence"] + f.said.get("fix", []))


def test_the_chinese_panel_has_no_english_sentence_outside_code(engine, tmp_path):
    report = run_doctor(engine, _options(tmp_path))
    failing = Report((*report.findings, *_failures()), report.seconds)
    page = doctor_panel.panel_html(failing.to_dict(), "zh-CN")
    words = re.sub(r"<[^>]+>", " ", re.sub(r"<code>.*?</code>", " ", page))
    assert english_sentences(words) == [], english_sentences(words)
    assert "端口" in page and "无法写入 /srv/data" in page and "缺少：<code>qwen-tts</code>" in page
    english_page = doctor_panel.panel_html(failing.to_dict(), "en")
    assert "cannot write in /srv/data" in english_page and "is taken by another program" in english_page
