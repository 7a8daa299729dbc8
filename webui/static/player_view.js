// Codec Workbench player, part 4 of 4: the controls and the player object. The transport (play,
// loop, time, zoom), one button per source (its key, its name, its loudness gain; aria-pressed says
// which one plays, not only the colour), the worst moments (or why there are none), the note.
// Words come from the manifest's "ui" (the server writes them in the page's language).
//
// cwPlayer(options) builds a player: options.waveform (draw the playing source's waveform),
// options.timeline (the quality timeline canvas), options.answerKeys ({key: button selector}).
// player.state() -> {source, time, playing, loop, levels, audible, sources, voices, view, residualOf} is for tests.

const CW_TICK_MS = 40; // scheduler and drawing period
const CW_MOMENT_S = 0.5; // a worst moment's loop: this much either side

function cwView(P) {
  function ui() { return (P.manifest && P.manifest.ui) || {}; }

  function button(cls, text, onclick, label) {
    const b = document.createElement("button");
    b.type = "button"; b.className = cls; b.textContent = text; b.onclick = onclick;
    if (label) b.setAttribute("aria-label", label);
    return b;
  }

  // Without a waveform (the blind test: X's picture would give the answer away) the canvas is a thin
  // track, the playhead and the loop over the time axis, so that on a phone the answer buttons are on
  // the first screen instead of under an empty box.
  const CW_TRACK_PX = 40;

  function skeleton(root) {
    root.innerHTML = `<div class="cw-transport"><button type="button" class="cw-play"></button>
      <label class="cw-loop"><input type="checkbox"> <span></span></label>
      <span class="cw-time" aria-live="off"></span><span class="cw-zoom"></span></div>
      <div class="cw-sources" role="group"></div>
      <canvas class="cw-wave" role="img" height="${P.options.waveform ? 106 : CW_TRACK_PX}"></canvas>
      ${P.options.timeline ? '<canvas class="cw-tl" role="img" height="110"></canvas><div class="cw-legend"></div>' : ""}
      <div class="cw-worst"></div><div class="cw-note"></div>`;
    root.querySelector(".cw-play").onclick = () => (P.playing ? P.pause() : P.play());
    root.querySelector(".cw-loop input").onchange = (e) => { P.loop.on = e.target.checked; P.draw(); };
    for (const c of root.querySelectorAll("canvas")) P.attach(c);
  }

  function sourceButton(s) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "cw-source" + (s.id === P.current ? " cw-active" : "");
    b.dataset.source = s.id;
    b.setAttribute("aria-pressed", s.id === P.current ? "true" : "false");
    if (s.key) {
      const k = document.createElement("kbd");
      k.textContent = s.key.toUpperCase();
      b.appendChild(k);
    }
    const gain = s.gain_db ? ` (${s.gain_db > 0 ? "+" : "−"}${Math.abs(s.gain_db).toFixed(1)} dB)` : "";
    b.appendChild(document.createTextNode(" " + (s.id === "residual" ? residualLabel(s) : s.label)));
    if (gain) {
      const g = document.createElement("span");
      g.className = "cw-gain"; // the presenter view folds it away
      g.textContent = gain;
      b.appendChild(g);
    }
    b.onclick = () => P.select(s.id);
    return b;
  }

  function residualLabel(s) { // "original − Opus 6 kbit/s" when R is taken against another source
    const target = P.manifest.sources.find((x) => x.id === P.residualOf);
    return ui().residual_of && target ? cwFill(ui().residual_of, {source: target.label}) : s.label;
  }

  function worstMoments(box) {
    box.innerHTML = "";
    const tl = P.manifest.timeline;
    if (!tl) return;
    if (tl.too_short_for_worst || !tl.worst.length) {
      box.textContent = cwFill(tl.too_short_for_worst ? ui().too_short : ui().no_worst, {seconds: tl.worst_window_s});
      return;
    }
    const title = document.createElement("span");
    title.textContent = (ui().worst || "") + ": ";
    box.appendChild(title);
    tl.worst.forEach((m, i) => {
      const snr = m.seg_snr_db === null ? "" : `, SNR ${m.seg_snr_db.toFixed(1)} dB`;
      const b = button("cw-moment", `${i + 1}. ${cwClock(m.time_s)}`, () => {
        P.loop = {on: true, a: Math.max(0, m.time_s - CW_MOMENT_S), b: Math.min(P.duration(), m.time_s + CW_MOMENT_S)};
        P.seek(P.loop.a); P.render();
        if (!P.playing) P.play(); // a worst moment is there to be heard: play it, not only set the loop
      });
      const figures = document.createElement("span");
      figures.className = "cw-figures"; // the presenter view folds the numbers away, the moment stays
      figures.textContent = ` · ${m.mel_distance_db.toFixed(1)} dB mel${snr}`;
      b.appendChild(figures);
      b.dataset.time = m.time_s;
      box.appendChild(b);
    });
  }

  P.render = () => {
    const root = P.root, M = P.manifest;
    if (!root) return;
    if (!M) { root.innerHTML = ""; return; }
    if (!root.querySelector(".cw-transport")) skeleton(root);
    const words = ui();
    const play = root.querySelector(".cw-play");
    play.textContent = P.playing ? "❚❚ " + (words.pause || "") : "▶ " + (words.play || "");
    play.setAttribute("aria-pressed", P.playing ? "true" : "false");
    root.querySelector(".cw-loop span").textContent = (words.loop || "") +
      (P.loop.b > P.loop.a ? ` ${cwClock(P.loop.a)}–${cwClock(P.loop.b)}` : "");
    root.querySelector(".cw-loop input").checked = P.loop.on;
    const zoom = root.querySelector(".cw-zoom");
    zoom.innerHTML = "";
    zoom.append(
      button("cw-zoom-in", "+", () => P.zoom(2, P.time()), words.zoom_in),
      button("cw-zoom-out", "−", () => P.zoom(0.5, P.time()), words.zoom_out),
      button("cw-zoom-all", words.zoom_all || "↔", () => P.resetView()),
    );
    const sources = root.querySelector(".cw-sources");
    sources.setAttribute("aria-label", words.sources || "");
    sources.innerHTML = "";
    for (const s of M.sources) sources.appendChild(sourceButton(s));
    worstMoments(root.querySelector(".cw-worst"));
    const legend = root.querySelector(".cw-legend"); // under the timeline, never over its curves (on a phone too)
    if (legend) {
      legend.innerHTML = "";
      legend.hidden = !M.timeline;
      for (const [cls, text] of [["cw-legend-mel", words.legend_mel], ["cw-legend-snr", words.legend_snr]]) {
        const item = document.createElement("span");
        item.className = cls;
        item.textContent = text || "";
        legend.appendChild(item);
      }
    }
    root.querySelector(".cw-note").textContent = words.note || "";
    P.background = null;
    P.draw();
  };
}

function cwPlayer(options) {
  const P = {options: options || {}, manifest: null, root: null};
  cwAudio(P); cwDraw(P); cwInput(P); cwView(P);
  P.mount = (root) => {
    P.root = root; P.background = null; P.render();
    new ResizeObserver(() => P.draw()).observe(root); // a tab shown again, a phone turned
  };
  P.setLoop = (a, b, on = true) => { P.loop = {on, a, b}; P.render(); };
  P.state = () => {
    const lv = P.levels();
    let audible = null;
    for (const [id, value] of Object.entries(lv)) if (value > 1e-4 && (audible === null || value > lv[audible])) audible = id;
    return {source: P.current, time: P.time(), playing: P.playing, loop: {...P.loop}, levels: lv, audible,
      sources: P.manifest ? P.manifest.sources.map((s) => s.id) : [], view: {...P.view}, duration: P.duration(),
      residualOf: P.residualOf,
      voices: P.voices.map((v) => ({id: v.id, from: v.from, when: v.when, stopped: v.stopped}))};
  };
  document.addEventListener("keydown", (e) => P.onKey(e));
  P.timer = setInterval(() => { P.watchVisibility(); P.tick(); }, CW_TICK_MS);
  return P;
}
