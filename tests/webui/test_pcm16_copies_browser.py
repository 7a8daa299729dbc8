"""Issue 29, item 4, in Debian's chromium: the player fetches the reconstruction as FLAC and hears
exactly the samples the metrics read (the WAV the server measured), sample for sample; the residual
and the anchors are fetched only once the listener picks them."""

from __future__ import annotations

import numpy as np
import pytest

from core.audio.files import load_audio
from tests.webui.test_demo_flow_browser import LAB, _open, _round_trip, chromium  # noqa: F401 - the module's browser

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # a whole flow in chromium: make test-slow (CI runs it)

BLOCK_JS = """async (id) => {
  const P = window.cwPlayer, file = P.files[id];
  P.seek(0);
  for (let i = 0; i < 400 && !file.ready.get(0); i++) await new Promise((r) => setTimeout(r, 25));
  const buffer = file.ready.get(0);
  return {url: file.url, copy: !!file.copy, rate: buffer.sampleRate, samples: Array.from(buffer.getChannelData(0))};
}"""


def test_the_flac_block_is_the_measured_wav_and_only_a_b_are_fetched_ahead(chromium, server):  # noqa: F811
    page = _open(chromium, server[0], viewport={"width": 1440, "height": 900})
    fetched: list[str] = []
    page.on("request", lambda r: fetched.append(r.url) if "/file=" in r.url else None)
    _round_trip(page)
    page.wait_for_function("window.cwPlayer && window.cwPlayer.manifest.listen && window.cwPlayer.manifest.timeline")
    manifest = page.evaluate("window.cwPlayer.manifest")
    path = next(s["path"] for s in manifest["sources"] if s["id"] == "reconstruction")
    got = page.evaluate(BLOCK_JS, "reconstruction")
    assert got["copy"] and got["url"].endswith(".listen.flac"), got["url"]
    wav = load_audio(path).samples  # what the metrics read
    heard = np.asarray(got["samples"], dtype=np.float32)
    assert got["rate"] == 24_000 and heard.size == min(wav.size, 8 * 24_000)
    assert np.array_equal(heard, wav[: heard.size]), float(np.abs(heard - wav[: heard.size]).max())
    ahead = [u for u in fetched if "residual" in u]
    assert not ahead, ahead  # not fetched before it is picked
    page.evaluate("window.cwPlayer.select('residual')")
    page.wait_for_function("window.cwPlayer.files.residual.ready.get(0)", timeout=30_000)
    assert any("residual" in u for u in fetched)
    assert not page._cw_errors, page._cw_errors
    page.context.close()
