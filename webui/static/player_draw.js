// Codec Workbench player, part 2 of 4: drawing. The waveform of the source that plays (or a plain
// track where the picture would give an answer away: the blind test), a time axis, the quality
// timeline with its worst moments, the loop region and the playhead, all over the visible window
// P.view = {a, b} (seconds; zoom). Colours come from the page's theme, so dark stays dark. Each
// canvas has role="img" and an aria-label saying what it shows, in the page's language.
//
// cwDraw(P) installs: draw(), zoom(factor, centre_s), pan(delta_s), resetView(), timeAt(canvas, x).

const CW_AXIS_PX = 16; // height of the time axis under the waveform
const CW_MIN_VIEW_S = 0.05; // the closest zoom: 50 ms across the canvas
const CW_MAX_ZOOM = 400; // and never more than this many times the whole clip

function cwFill(template, fields) { // "{name}" placeholders, as the server's catalogue writes them
  return String(template || "").replace(/\{(\w+)\}/g, (m, k) => (k in fields ? fields[k] : m));
}

function cwClock(t) {
  const m = Math.floor(t / 60), s = t - 60 * m;
  return m + ":" + (s < 10 ? "0" : "") + s.toFixed(2);
}

function cwDraw(P) {
  P.view = {a: 0, b: 0};

  function theme() { // the page's colours (Gradio sets these variables for light and dark)
    const css = getComputedStyle(P.root);
    const v = (name, fallback) => (css.getPropertyValue(name) || "").trim() || fallback;
    const dark = document.body.classList.contains("dark") || !!P.root.closest(".dark");
    return {
      dark,
      ground: v("--block-background-fill", dark ? "#1f2937" : "#ffffff"),
      text: v("--body-text-color", dark ? "#f3f4f6" : "#1f2937"),
      grid: dark ? "#4b5563" : "#c7cbd1",
      wave: dark ? "#8fb4ff" : "#2f5fb3",
      mel: dark ? "#ff8a80" : "#b3261e",
      snr: dark ? "#7dd87d" : "#1b6e33",
      loop: dark ? "rgba(120,170,255,0.28)" : "rgba(47,95,179,0.16)",
      head: dark ? "#ff6b6b" : "#c62828",
    };
  }

  function view() {
    const d = P.duration();
    if (!(P.view.b > P.view.a) || P.view.b > d + 1e-9) P.view = {a: 0, b: d};
    return P.view;
  }

  P.resetView = () => { P.view = {a: 0, b: P.duration()}; P.draw(); };

  P.zoom = (factor, centre) => { // factor > 1 zooms in, around centre (seconds)
    const d = P.duration(), v = view(), span = v.b - v.a;
    const target = Math.min(d, Math.max(CW_MIN_VIEW_S, d / CW_MAX_ZOOM, span / factor));
    const c = centre === undefined ? (v.a + v.b) / 2 : centre;
    const share = span > 0 ? (c - v.a) / span : 0.5; // the centre stays under the finger / pointer
    let a = c - share * target;
    a = Math.max(0, Math.min(d - target, a));
    P.view = {a, b: a + target};
    P.draw();
    if (P.render) P.render();
  };

  P.pan = (delta) => {
    const d = P.duration(), v = view(), span = v.b - v.a;
    const a = Math.max(0, Math.min(d - span, v.a + delta));
    P.view = {a, b: a + span};
    P.draw();
  };

  P.timeAt = (canvas, clientX) => {
    const r = canvas.getBoundingClientRect(), v = view();
    return v.a + Math.max(0, Math.min(1, (clientX - r.left) / r.width)) * (v.b - v.a);
  };

  function scale(canvas) {
    const v = view();
    return (s) => (s - v.a) / Math.max(1e-9, v.b - v.a) * canvas.width;
  }

  function niceStep(span, px) { // a tick every 1, 2 or 5 x 10^n seconds, about 90 px apart
    const raw = span / Math.max(1, px / 90);
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    return [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw) || raw;
  }

  function axis(g, canvas, c, top) {
    const v = view(), x = scale(canvas), step = niceStep(v.b - v.a, canvas.width);
    g.fillStyle = c.ground; g.fillRect(0, top, canvas.width, canvas.height - top);
    g.strokeStyle = c.grid; g.fillStyle = c.text; g.font = "11px sans-serif"; g.beginPath();
    const digits = step < 0.1 ? 2 : step < 1 ? 1 : 0;
    for (let t = Math.ceil(v.a / step) * step; t <= v.b + 1e-9; t += step) {
      const px = Math.round(x(t)) + 0.5;
      g.moveTo(px, top); g.lineTo(px, top + 4);
      const label = t.toFixed(digits) + " s";
      const w = g.measureText(label).width;
      g.fillText(label, Math.min(canvas.width - w - 2, Math.max(2, px - w / 2)), top + 14);
    }
    g.stroke();
  }

  function envelopeOf(id) {
    const M = P.manifest, s = M.sources.find((x) => x.id === id);
    return (s && s.envelope) || (id === (M.sources[0] || {}).id ? M.envelope : null) || null;
  }

  function drawWave(canvas, c) {
    const g = canvas.getContext("2d"), h = canvas.height - CW_AXIS_PX, x = scale(canvas), v = view();
    g.fillStyle = c.ground; g.fillRect(0, 0, canvas.width, canvas.height);
    const env = P.options.waveform ? envelopeOf(P.current) : null;
    if (env) {
      g.strokeStyle = c.wave; g.beginPath();
      const per = env.seconds_per_column;
      const first = Math.max(0, Math.floor(v.a / per)), last = Math.min(env.min.length, Math.ceil(v.b / per) + 1);
      for (let i = first; i < last; i++) {
        const lo = env.min[i] === null ? 0 : env.min[i], hi = env.max[i] === null ? 0 : env.max[i];
        const px = x((i + 0.5) * per);
        g.moveTo(px, h / 2 - hi * h / 2); g.lineTo(px, h / 2 - lo * h / 2 + 1);
      }
      g.stroke();
    } else { // a plain track: where the time is, nothing about what plays
      g.fillStyle = c.grid; g.fillRect(0, h / 2 - 2, canvas.width, 4);
    }
    seams(g, canvas, c, h);
    axis(g, canvas, c, h);
  }

  function drawTimeline(canvas, c) {
    const g = canvas.getContext("2d"), M = P.manifest, tl = M.timeline, h = canvas.height, x = scale(canvas);
    g.fillStyle = c.ground; g.fillRect(0, 0, canvas.width, h);
    if (!tl) return;
    // 15 % headroom and the top below the worst moments' marks (y ≤ 19 px): a plateau at the clip's largest
    // distance reads as a plateau, not as a curve cut off at the edge
    const top = Math.max(1, ...tl.mel_distance_db.filter((v) => v !== null)) * 1.15, span = h - 28;
    const curve = (values, y, colour) => {
      g.strokeStyle = colour; g.lineWidth = 1.5; g.beginPath(); let pen = false;
      values.forEach((v, i) => {
        if (v === null) { pen = false; return; }
        const px = x(tl.time_s[i]);
        if (pen) g.lineTo(px, y(v)); else g.moveTo(px, y(v));
        pen = true;
      });
      g.stroke(); g.lineWidth = 1;
    };
    curve(tl.mel_distance_db, (v) => h - 4 - v / top * span, c.mel);
    curve(tl.seg_snr_db, (v) => h - 4 - (v + 10) / 45 * span, c.snr);
    seams(g, canvas, c, h);
    g.font = "bold 11px sans-serif"; g.fillStyle = c.text;
    tl.worst.forEach((m, i) => { const px = x(m.time_s); g.fillText(String(i + 1), px - 3, 11); g.fillRect(px - 0.5, 13, 1, 6); });
    // the legend is the HTML line under the canvas (player_view.js): drawn here it covered the curves on a phone
  }

  function seams(g, canvas, c, h) {
    const x = scale(canvas), tl = P.manifest.timeline;
    g.strokeStyle = c.grid; g.setLineDash([3, 3]); g.beginPath();
    for (const s of (tl && tl.seams_s) || []) { g.moveTo(x(s), 0); g.lineTo(x(s), h); }
    g.stroke(); g.setLineDash([]);
  }

  function describe(wave, timeline) { // text alternatives, in the page's language
    const ui = P.manifest.ui || {}, v = view(), source = (P.manifest.sources.find((s) => s.id === P.current) || {}).label || "";
    const loop = P.loop.b > P.loop.a ? cwFill(ui.alt_loop, {a: cwClock(P.loop.a), b: cwClock(P.loop.b)}) : "";
    const fields = {source, a: cwClock(v.a), b: cwClock(v.b), duration: cwClock(P.duration()), loop};
    wave.setAttribute("aria-label", cwFill(P.options.waveform ? ui.alt_wave : ui.alt_track, fields));
    const tl = P.manifest.timeline;
    if (timeline && tl) {
      const times = tl.worst.map((m) => cwClock(m.time_s)).join(", ");
      timeline.setAttribute("aria-label", cwFill(ui.alt_timeline, {...fields, worst: times || "–"}));
    }
  }

  P.draw = () => {
    const root = P.root, M = P.manifest;
    if (!root || !M) return;
    const wave = root.querySelector(".cw-wave"), timeline = root.querySelector(".cw-tl");
    if (!wave) return;
    const c = theme(), canvases = [wave, timeline].filter(Boolean);
    const key = [P.current, view().a, view().b, c.dark].join("|");
    for (const canvas of canvases) {
      const width = Math.max(200, Math.round(canvas.clientWidth || root.clientWidth || 800));
      if (canvas.width !== width) { canvas.width = width; P.background = null; }
    }
    if (!P.background || P.backgroundKey !== key) {
      drawWave(wave, c);
      if (timeline) drawTimeline(timeline, c);
      P.background = canvases.map((cv) => cv.getContext("2d").getImageData(0, 0, cv.width, cv.height));
      P.backgroundKey = key;
    }
    describe(wave, timeline);
    const t = P.time();
    const clock = root.querySelector(".cw-time");
    if (clock) clock.textContent = `${cwClock(t)} / ${cwClock(P.duration())}`;
    canvases.forEach((canvas, i) => {
      const g = canvas.getContext("2d"), x = scale(canvas), h = canvas === wave ? canvas.height - CW_AXIS_PX : canvas.height;
      g.putImageData(P.background[i], 0, 0);
      const whole = P.loop.a <= 0 && P.loop.b >= P.duration() - 1e-3; // a loop over everything is no region
      if (P.loop.b > P.loop.a && !whole) { g.fillStyle = c.loop; g.fillRect(x(P.loop.a), 0, x(P.loop.b) - x(P.loop.a), h); }
      g.fillStyle = c.head; g.fillRect(Math.round(x(t)) - 1, 0, 2, h);
    });
  };
}
