"""Issue 29, item 4: the report a person can send. The bitrate under a kbit/s label is in kbit/s,
no section comes after the footer, the environment is in words (no raw JSON), the verdict has the
card's look, and the page opens in the browser (served inline, with a policy that lets it run
nothing) while Gradio's file route would send it as a download."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import numpy as np
import pytest
import soundfile as sf
from fastapi import FastAPI
from fastapi.testclient import TestClient

from core.judging import report
from webui.serving.report_route import report_routes, report_url
from webui.views import compare_view, report_page

COMPARISON = {
    "table": {
        "rows": ["PESQ-WB", "Bitrate"],
        "columns": [
            {
                "source": {"id": "codec", "kind": "codec", "label": "codec", "bitrate_bps": 2200.0},
                "values": {"PESQ-WB": 1.1, "Bitrate": 2200.0},
            },
            {
                "source": {"id": "opus6", "kind": "anchor", "label": "Opus 6 kbit/s", "bitrate_bps": 6017.0},
                "values": {"PESQ-WB": 1.5, "Bitrate": 6017.0},
            },
            {
                "source": {"id": "mp3", "kind": "anchor", "label": "MP3 32 kbit/s", "bitrate_bps": 32288.0},
                "values": {"PESQ-WB": 3.1, "Bitrate": 32288.0},
            },
        ],
    },
    "placing": {
        "placements": [],
        "sentence": "On this clip the codec is further from the original than MP3 32 kbit/s.",
        "random_weights": False,
    },
}
VERDICT = {
    "level": "red",
    "words": "badly degraded",
    "reasons": ["speech is harder to understand"],
    "caveat": "random weights",
    "mos_original": 3.9,
    "mos_reconstruction": 1.4,
    "seconds": 1.0,
}
ENV = {
    "model": "/models/qwen",
    "random_weights": True,
    "device": "cpu",
    "dtype": "float32",
    "versions": {"torch": "2.11.0", "python": "3.11.9"},
    "timings_s": {"encode_s": 0.06, "decode_s": 0.09, "estimate": {"need": "0.02"}, "warnings": []},
}


class Cells(HTMLParser):
    """Each table's rows as lists of cell texts; the tags in document order."""

    def __init__(self):
        super().__init__()
        self.rows, self.tags, self._row, self._cell = [], [], None, None

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._row is not None:
            self._row.append(self._cell or "")
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


@pytest.fixture
def files(tmp_path):
    folder = tmp_path / "req-report-abc123"
    folder.mkdir()
    for name in ("clip_24k_mono.wav", "clip_reconstruction.wav", "clip_mp3.wav"):
        sf.write(folder / name, np.zeros(2400, dtype=np.float32), 24_000, subtype="FLOAT")
    wav = folder / "clip_24k_mono.wav"
    png = folder / "spec.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n")
    tokens = folder / "clip_tokens.npz"
    tokens.write_bytes(b"x")
    return folder, wav, png, tokens


def _write(files, lang):
    folder, wav, png, tokens = files
    sources = [
        {
            "id": "mp3",
            "kind": "anchor",
            "label": "MP3 32 kbit/s",
            "bitrate_bps": 32288.0,
            "path": str(folder / "clip_mp3.wav"),
        }
    ]
    render = report.english_page if lang is None else report_page.renderer(lang)
    words = None if lang is None else compare_view.report_words(COMPARISON, lang)
    _zip, html_path = report.write_roundtrip_report(
        folder,
        f"clip_{lang}",
        wav,
        wav,
        tokens,
        {"spectrograms": png},
        [],
        VERDICT,
        ENV,
        render,
        sources,
        COMPARISON,
        words,
    )
    return html_path


@pytest.mark.parametrize("lang", [None, "en", "zh-CN"])
def test_units_order_environment_and_card(files, lang):
    text = _write(files, lang).read_text(encoding="utf-8")
    cells = Cells()
    cells.feed(text)
    kbit = [row for row in cells.rows if row and "kbit/s" in row[0]]
    assert kbit, "the table of every source has a bitrate row labelled in kbit/s"
    for row in kbit:
        numbers = [float(c) for c in row[1:] if re.fullmatch(r"[\d.]+", c.strip())]
        assert numbers and max(numbers) < 1000, f"a bit/s value under a kbit/s label: {row}"
    after = text[text.index("</footer>") + len("</footer>") :]
    assert re.fullmatch(r"\s*</body></html>\s*", after), f"something after the footer: {after[:200]}"
    assert cells.tags.index("footer") > max(i for i, t in enumerate(cells.tags) if t in ("h2", "table"))
    env = [row for row in cells.rows if len(row) == 2]
    assert env and not any("{" in row[1] or '"' in row[1] for row in env), env  # no raw JSON
    assert any("torch 2.11.0" in row[1] for row in env)
    assert 'class="card red"' in text and 'class="dot"' in text  # the card's look, not a grey box


def test_the_report_opens_in_the_browser_and_runs_nothing(files):
    folder, *_ = files
    html_path = _write(files, "en")
    url = report_url(folder.parent, html_path)
    assert url == f"report/{folder.name}/{html_path.name}"
    app = FastAPI()
    app.router.routes.extend(report_routes(folder.parent))
    client = TestClient(app)
    answer = client.get("/" + url)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/html")
    assert answer.headers["content-disposition"].startswith("inline")
    assert "script-src" not in answer.headers["content-security-policy"]  # default-src 'none': no script
    assert "sandbox" in answer.headers["content-security-policy"]
    assert "Codec Workbench" in answer.text
    for bad in (
        f"/report/{folder.name}/..%2F..%2Fetc_report.html",
        "/report/req-lab-x/clip_report.html",
        f"/report/{folder.name}/clip_24k_mono.wav",
        f"/report/{folder.name}/gone_report.html",
    ):
        assert client.get(bad).status_code == 404, bad
    assert report_url(folder.parent, folder / "clip_24k_mono.wav") is None
