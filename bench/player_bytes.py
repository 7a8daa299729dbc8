"""What the lab's player fetches for a 10-minute result, float WAV against FLAC.

    python -m bench.player_bytes            # 10 minutes of the recorded asset, looped
    python -m bench.player_bytes --browser  # and the bytes Chromium fetches for a real 10-minute result

``--browser`` runs the app on the tiny random-weight checkpoint (port 7940), makes a real round trip
of the 10-minute clip in Debian's chromium, waits for the final manifest, then walks the playhead
through the whole clip block by block (what a listener who hears all of it makes the player fetch)
and counts the bytes of every file response: "before" is the same page with the manifest as it was
before this change (no FLAC copies, every source fetched ahead), "after" the manifest as served
(FLAC, only the original and the reconstruction fetched ahead), and "after, every source chosen"
the worst case, each source picked once at the start. Random weights: the reconstruction is noise,
which compresses worse than a real codec's output (the stand-in rows above).

The player streams each source in 8 s blocks around the playhead (webui/static/player_audio.js), and
prefetches every source so that a flip is instant: a listener who hears the whole clip fetches every
source whole. This measures, per source, the bytes of the float32 WAV the page serves today and of
lossless FLAC of the same samples at 24 and 16 bits (FLAC stores integers: it is exact only for
samples on that grid, so "what is heard is what was measured" needs the measured PCM on the grid
first). Sources: the original (the asset, 16-bit at heart), a reconstruction stand-in (the original
through Opus 12 kbit/s: a real codec's float output), and their residual. Writes
``bench/results/player_bytes.json`` and ``.md``.
"""

from __future__ import annotations

import io
import os
import platform
import sys
from pathlib import Path

import numpy as np
import soundfile as sf

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import table, write_results  # noqa: E402
from core.anchors import make_anchors, parse_anchors  # noqa: E402
from core.audio.files import load_audio  # noqa: E402
from core.codec import SAMPLE_RATE  # noqa: E402

ASSET = ROOT / "webui" / "assets" / "speech_male_24k.wav"
MINUTES = 10.0


def _grid(x: np.ndarray, bits: int) -> np.ndarray:
    scale = 2.0 ** (bits - 1)
    return (np.round(np.clip(x, -1.0, 1.0 - 1.0 / scale) * scale) / scale).astype(np.float32)


def _flac_bytes(x: np.ndarray, bits: int) -> tuple[int, bool]:
    q = _grid(x, bits)
    buffer = io.BytesIO()
    sf.write(buffer, q, SAMPLE_RATE, format="FLAC", subtype="PCM_24" if bits > 16 else "PCM_16")
    buffer.seek(0)
    back, _ = sf.read(buffer, dtype="float32")
    return buffer.getbuffer().nbytes, bool(np.array_equal(back, q))


WALK_JS = """async (args) => {
  const P = window.cwPlayer, [before, choose] = args;
  if (!window.cwServed) window.cwServed = P.manifest; // the manifest as the server sent it
  const m = window.cwServed, last = m.sources.map((s) => s.id);
  P.load({...m, sources: []}, false); // forget every block fetched so far
  P.chosen = new Set();
  P.load(before ? {...m, listen: {}, prefetch: undefined} : m, false);
  if (choose) { for (const id of last) P.select(id); P.select("original"); }
  for (let t = 0; t < P.duration(); t += 8) { P.seek(t); await new Promise((r) => setTimeout(r, 60)); }
  await new Promise((r) => setTimeout(r, 3000));
  return last;
}"""


def browser_bytes(clip: np.ndarray) -> dict:
    """Bytes of file responses Chromium receives for the 10-minute result, per scenario (see the module)."""
    import tempfile

    from playwright.sync_api import sync_playwright

    from core.model.checkpoints import build_tiny_checkpoint
    from core.model.engine import Engine
    from core.settings import Settings
    from webui.app import build_app
    from webui.options import UiOptions
    from webui.server import ServerOptions, launch

    work = Path(tempfile.mkdtemp(prefix="player-bytes-"))
    wav = work / "ten minutes.wav"
    sf.write(wav, clip, SAMPLE_RATE, subtype="PCM_16")
    engine = Engine(Settings(model=str(build_tiny_checkpoint(work / "tiny")), device="cpu"))
    engine.warm_up()
    ui = UiOptions(temp_root=work / "server")
    demo = build_app(engine, ui)
    _app, url = launch(demo, engine, ui, ServerOptions(port=7940))
    out: dict = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=["--no-sandbox"])
            page = browser.new_context(viewport={"width": 1440, "height": 900}).new_page()
            page.context.new_cdp_session(page).send("Network.setCacheDisabled", {"cacheDisabled": True})
            page.goto(url)
            page.locator("#roundtrip-input input[type=file]").set_input_files(str(wav))
            page.locator("#roundtrip-input [data-testid=download-link]").wait_for(state="attached", timeout=600_000)
            page.locator("#roundtrip-run").click()
            page.locator("#roundtrip-verdict [data-state=final]").wait_for(timeout=900_000)
            page.wait_for_function("window.cwPlayer && window.cwPlayer.manifest.timeline", timeout=900_000)
            for name, before, choose in (("before", True, False), ("after", False, False), ("after_all", False, True)):
                got: list[int] = []

                def count(response, got=got):
                    if "/file=" in response.url and response.request.method == "GET":
                        try:
                            got.append(len(response.body()))
                        except Exception:  # noqa: BLE001 - a response the page dropped: not received whole
                            pass

                page.on("response", count)
                sources = page.evaluate(WALK_JS, [before, choose])
                page.remove_listener("response", count)
                out[name] = {"bytes": sum(got), "requests": len(got), "sources": sources}
            browser.close()
    finally:
        demo.close()
    return out


def main() -> int:
    clip = load_audio(ASSET).samples
    n = int(MINUTES * 60 * SAMPLE_RATE)
    original = np.tile(clip, n // clip.size + 1)[:n].astype(np.float32)
    made = make_anchors(original, parse_anchors("opus12"))
    stand_in = made.made[0].samples[:n].astype(np.float32)
    residual = original[: stand_in.size] - stand_in
    rows: list[dict] = []
    for name, x in (("original", original), ("reconstruction (Opus 12 stand-in)", stand_in), ("residual", residual)):
        wav = x.size * 4 + 44
        row: dict = {"source": name, "float_wav_bytes": wav}
        for bits in (24, 16):
            size, exact = _flac_bytes(x, bits)
            row[f"flac{bits}_bytes"], row[f"flac{bits}_exact"] = size, exact
            row[f"flac{bits}_ratio"] = round(wav / size, 2)
        rows.append(row)
    result: dict = {
        "minutes": MINUTES,
        "python": platform.python_version(),
        "load_average": os.getloadavg(),
        "rows": rows,
    }
    if "--browser" in sys.argv:
        result["browser"] = browser_bytes(original)
    lines = [
        "# What the player fetches for a 10-minute result: float WAV against FLAC",
        "",
        f"`python -m bench.player_bytes`: {MINUTES:g} minutes of `webui/assets/speech_male_24k.wav` looped; the "
        "reconstruction is a stand-in (Opus 12 kbit/s decoded: a real codec's float output; the tiny checkpoint's is "
        "noise). FLAC is lossless for samples on its grid: ratios are for the samples rounded to 24 or 16 bits.",
        "",
        *table(
            ["source", "float WAV", "FLAC 24-bit (ratio)", "FLAC 16-bit (ratio)"],
            (
                [
                    r["source"],
                    f"{r['float_wav_bytes'] / 1e6:.1f} MB",
                    f"{r['flac24_bytes'] / 1e6:.1f} MB ({r['flac24_ratio']}×)",
                    f"{r['flac16_bytes'] / 1e6:.1f} MB ({r['flac16_ratio']}×)",
                ]
                for r in rows
            ),
            right=3,
        ),
    ]
    if "browser" in result:
        b = result["browser"]
        lines += [
            "",
            "## What Chromium fetched for a real 10-minute result (`--browser`)",
            "",
            f"Tiny random-weight checkpoint (its reconstruction is noise), the whole clip walked block by block; "
            f"sources: {', '.join(b['after']['sources'])}. Load average {result['load_average'][0]:.1f} (shared machine).",
            "",
        ]
        pages = (
            ("before", "before: float WAV, every source fetched ahead"),
            ("after", "after: FLAC 16-bit, original + reconstruction ahead"),
            ("after_all", "after, every source chosen once"),
        )
        lines += table(
            ["page", "bytes fetched", "requests", "vs before"],
            (
                [
                    words,
                    f"{b[k]['bytes'] / 1e6:.1f} MB",
                    b[k]["requests"],
                    f"{b['before']['bytes'] / max(b[k]['bytes'], 1):.1f}×",
                ]
                for k, words in pages
            ),
            right=3,
        )
    write_results(ROOT / "bench" / "results", "player_bytes", result, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
