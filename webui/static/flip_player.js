// Codec Workbench listening lab: one transport over time-aligned sources (original, reconstruction,
// residual, ladder levels), switched instantly with a short crossfade at the same position.
//
// Runs as the js_on_load of a gr.HTML (webui/lab.py): `element`, `props` and `watch` come from
// Gradio. props.value is the manifest (JSON) that webui/lab_jobs.py writes: file paths in the
// request folder, loudness gains, the quality timeline and a decimated waveform. Audio is fetched
// from Gradio's file route in blocks of BLOCK_S seconds with HTTP Range requests, only around the
// playhead, so a 30-minute clip is never loaded (or drawn) in one piece.
// window.cwPlayer.state() -> {source, time, playing, loop, levels, audible, residualOf} is there for tests.
// R is the residual against the last source chosen (manifest.residuals holds one file per source).

const BLOCK_S = 8; // seconds of audio per fetched block
const AHEAD_S = 1.0; // audio scheduled this far ahead of the clock
const FADE_S = 0.012; // crossfade when flipping, seeking or looping (no click)
const PREFETCH_BLOCKS = 2; // blocks fetched ahead of the playhead, for every source
const KEEP_BLOCKS = 16; // blocks kept per source (older ones are dropped)
const TICK_MS = 40; // scheduler period
const HEADER_BYTES = 65536; // bytes read to find a WAV file's data chunk

function createPlayer() {
  const P = {manifest: null, ctx: null, master: null, files: {}, current: null, playing: false,
    pos: 0, clock: null, voices: [], loop: {on: false, a: 0, b: 0}, root: null, timer: null, drag: null,
    residualOf: "reconstruction"};

  function fileUrl(path) {
    const cfg = window.gradio_config || {};
    const root = (cfg.root || location.origin + location.pathname).replace(/\/$/, "");
    return root + "/gradio_api/file=" + path.split("/").map(encodeURIComponent).join("/");
  }

  function audioContext() {
    if (!P.ctx) {
      P.ctx = new AudioContext({sampleRate: P.manifest.sample_rate}); // no resampling of our buffers
      P.master = P.ctx.createGain();
      P.master.connect(P.ctx.destination);
    }
    return P.ctx;
  }

  // ---- files: a WAV header, then blocks by byte range --------------------------------------
  async function header(file) {
    if (!file.header) {
      file.header = fetch(file.url, {headers: {Range: "bytes=0-" + (HEADER_BYTES - 1)}})
        .then((r) => r.arrayBuffer()).then(parseWav);
    }
    return file.header;
  }

  function parseWav(buf) {
    const v = new DataView(buf);
    const tag = (o) => String.fromCharCode(v.getUint8(o), v.getUint8(o + 1), v.getUint8(o + 2), v.getUint8(o + 3));
    if (tag(0) !== "RIFF" || tag(8) !== "WAVE") throw new Error("not a WAV file");
    let o = 12, fmt = null;
    while (o + 8 <= buf.byteLength) {
      const id = tag(o), size = v.getUint32(o + 4, true);
      if (id === "fmt ") {
        let code = v.getUint16(o + 8, true);
        if (code === 0xfffe) code = v.getUint16(o + 32, true); // WAVE_FORMAT_EXTENSIBLE: the subformat
        fmt = {code, channels: v.getUint16(o + 10, true), rate: v.getUint32(o + 12, true), bits: v.getUint16(o + 22, true)};
      } else if (id === "data") {
        const width = fmt.bits / 8 * fmt.channels;
        return {...fmt, offset: o + 8, frames: Math.floor(size / width), width};
      }
      o += 8 + size + (size % 2);
    }
    throw new Error("no data chunk in the first " + HEADER_BYTES + " bytes");
  }

  function block(file, index) {
    if (file.blocks.has(index)) return file.blocks.get(index);
    const promise = header(file).then(async (h) => {
      const first = index * BLOCK_S * h.rate;
      const count = Math.max(0, Math.min(BLOCK_S * h.rate, h.frames - first));
      if (count === 0) return null;
      const start = h.offset + first * h.width, end = start + count * h.width - 1;
      const r = await fetch(file.url, {headers: {Range: `bytes=${start}-${end}`}});
      let bytes = await r.arrayBuffer();
      if (r.status === 200) bytes = bytes.slice(start, end + 1); // a server without ranges sent it all
      const samples = new Float32Array(count);
      const dv = new DataView(bytes);
      for (let i = 0; i < count; i++) { // first channel; our files are mono
        const at = i * h.width;
        samples[i] = h.code === 3 ? dv.getFloat32(at, true) : dv.getInt16(at, true) / 32768;
      }
      const buffer = audioContext().createBuffer(1, count, h.rate);
      buffer.copyToChannel(samples, 0);
      return buffer;
    });
    file.blocks.set(index, promise);
    promise.then((b) => { file.ready.set(index, b); });
    if (file.blocks.size > KEEP_BLOCKS) { // forget the block farthest from this one
      let far = null;
      for (const k of file.blocks.keys()) if (far === null || Math.abs(k - index) > Math.abs(far - index)) far = k;
      file.blocks.delete(far); file.ready.delete(far);
    }
    return promise;
  }

  function prefetch(at) {
    const first = Math.floor(Math.max(0, at) / BLOCK_S);
    for (const file of Object.values(P.files)) {
      for (let b = first; b <= first + PREFETCH_BLOCKS; b++) if (b * BLOCK_S < P.manifest.duration_s) block(file, b);
    }
  }

  // ---- voices: one source playing from a position at a context time -------------------------
  function gainOf(id) {
    const s = P.manifest.sources.find((x) => x.id === id);
    return Math.pow(10, (s ? s.gain_db : 0) / 20);
  }

  function startVoice(id, when, from) {
    const ctx = audioContext();
    const gain = ctx.createGain(), analyser = ctx.createAnalyser();
    analyser.fftSize = 2048;
    gain.gain.setValueAtTime(0, when);
    gain.gain.linearRampToValueAtTime(gainOf(id), when + FADE_S);
    gain.connect(analyser); analyser.connect(P.master);
    const voice = {id, when, from, gain, analyser, nodes: [], next: from, stopped: false};
    P.voices.push(voice);
    feed(voice);
    return voice;
  }

  function feed(voice) { // schedule this voice's blocks up to AHEAD_S past the clock
    const ctx = P.ctx, file = P.files[voice.id];
    const until = Math.min(P.manifest.duration_s, voice.from + (ctx.currentTime + AHEAD_S - voice.when));
    while (!voice.stopped && voice.next < until - 1e-6) {
      const index = Math.floor(voice.next / BLOCK_S + 1e-9);
      const buffer = file.ready.get(index);
      if (!buffer) { block(file, index); return; } // not here yet: scheduled on a later tick
      const at = voice.when + (voice.next - voice.from);
      const offset = voice.next - index * BLOCK_S;
      const node = ctx.createBufferSource();
      node.buffer = buffer;
      node.connect(voice.gain);
      const late = Math.max(0, ctx.currentTime - at); // a late block starts where the clock is
      if (offset + late < buffer.duration) node.start(at + late, offset + late);
      voice.nodes.push(node);
      voice.next = index * BLOCK_S + buffer.duration;
    }
  }

  function stopVoice(voice, when) {
    if (voice.stopped) return;
    voice.stopped = true;
    const g = voice.gain.gain;
    g.cancelScheduledValues(when);
    g.setValueAtTime(when < voice.when + FADE_S ? 0 : gainOf(voice.id), when);
    g.linearRampToValueAtTime(0, when + FADE_S);
    for (const n of voice.nodes) { try { n.stop(when + FADE_S + 0.01); } catch (e) { /* not started */ } }
    setTimeout(() => { voice.analyser.disconnect(); P.voices = P.voices.filter((v) => v !== voice); },
      (when - P.ctx.currentTime + FADE_S) * 1000 + 200);
  }

  // ---- transport ------------------------------------------------------------------------------
  function time() {
    if (!P.playing || !P.clock) return P.pos;
    return Math.min(P.manifest.duration_s, P.clock.from + Math.max(0, P.ctx.currentTime - P.clock.when));
  }

  function restart(at) { // the current source from `at`, now, crossfaded from whatever played
    const when = P.ctx.currentTime + 0.005;
    for (const v of P.voices) stopVoice(v, when);
    P.clock = {when, from: at};
    startVoice(P.current, when, at);
  }

  async function play() {
    if (!P.manifest || P.playing) return;
    const ctx = audioContext();
    if (ctx.state !== "running") await ctx.resume();
    if (P.pos >= P.manifest.duration_s - 0.01) P.pos = P.loop.on ? P.loop.a : 0;
    prefetch(P.pos);
    await block(P.files[P.current], Math.floor(P.pos / BLOCK_S));
    P.playing = true;
    restart(P.pos);
    render();
  }

  function pause() {
    if (!P.playing) return;
    P.pos = time();
    P.playing = false;
    for (const v of P.voices) stopVoice(v, P.ctx.currentTime);
    render();
  }

  function seek(t) {
    P.pos = Math.max(0, Math.min(P.manifest ? P.manifest.duration_s : 0, t));
    prefetch(P.pos);
    if (P.playing) restart(P.pos);
    draw();
  }

  // ---- the residual against any source: R plays original − the last source chosen ---------
  function newFile(path) { return {path, url: fileUrl(path), blocks: new Map(), ready: new Map()}; }

  function retarget(id) { // manifest.residuals: {source id: path of original − that source}
    const path = ((P.manifest && P.manifest.residuals) || {})[id];
    if (!path || !P.files.residual || id === P.residualOf) return;
    P.residualOf = id;
    P.files.residual = P.files.residual.path === path ? P.files.residual : newFile(path); // heard next time R is
  }

  function residualLabel(s) {
    const ui = P.manifest.ui || {}, target = P.manifest.sources.find((x) => x.id === P.residualOf);
    return ui.residual_of && target ? ui.residual_of.replace("{source}", target.label) : s.label;
  }

  function select(id) {
    if (id !== "original" && id !== "residual") retarget(id);
    if (!P.files[id] || id === P.current) { render(); return; }
    P.current = id;
    if (P.playing) { // same position, new source, crossfaded
      const when = P.ctx.currentTime + 0.005;
      const at = P.clock.from + (when - P.clock.when);
      for (const v of P.voices) stopVoice(v, when);
      P.clock = {when, from: at};
      startVoice(id, when, at);
    }
    render();
  }

  function tick() {
    if (!P.playing) return;
    let t = time();
    if (P.loop.on && P.loop.b > P.loop.a && t >= P.loop.b) { seek(P.loop.a); t = P.loop.a; }
    else if (t >= P.manifest.duration_s - 1e-3) { P.pos = P.manifest.duration_s; P.playing = false; render(); return; }
    for (const v of P.voices) if (!v.stopped) feed(v);
    if (Math.floor(t / BLOCK_S) !== P.lastBlock) { P.lastBlock = Math.floor(t / BLOCK_S); prefetch(t); }
    draw();
  }

  function levels() { // RMS of what each source's voice is playing right now
    const out = {}, data = new Float32Array(2048);
    for (const v of P.voices) {
      if (v.stopped) continue;
      v.analyser.getFloatTimeDomainData(data);
      let sum = 0;
      for (const x of data) sum += x * x;
      out[v.id] = Math.max(out[v.id] || 0, Math.sqrt(sum / data.length));
    }
    return out;
  }

  // ---- page -------------------------------------------------------------------------------------
  function fmt(t) {
    const m = Math.floor(t / 60), s = t - 60 * m;
    return m + ":" + (s < 10 ? "0" : "") + s.toFixed(2);
  }

  function render() {
    const root = P.root, M = P.manifest;
    if (!root) return;
    if (!M) { root.innerHTML = ""; return; }
    const ui = M.ui || {};
    if (!root.querySelector(".cw-transport")) {
      root.innerHTML = `<div class="cw-transport"><button class="cw-play"></button>
        <label class="cw-loop"><input type="checkbox"> <span></span></label>
        <span class="cw-time"></span><span class="cw-gains"></span></div>
        <div class="cw-sources"></div><canvas class="cw-wave" height="90"></canvas>
        <canvas class="cw-tl" height="110"></canvas><div class="cw-worst"></div><div class="cw-note"></div>`;
      root.querySelector(".cw-play").onclick = () => (P.playing ? pause() : play());
      root.querySelector(".cw-loop input").onchange = (e) => { P.loop.on = e.target.checked; };
      for (const c of root.querySelectorAll("canvas")) attachCanvas(c);
    }
    root.querySelector(".cw-play").textContent = P.playing ? "❚❚ " + (ui.pause || "Pause") : "▶ " + (ui.play || "Play");
    root.querySelector(".cw-loop span").textContent = (ui.loop || "Loop selection") +
      (P.loop.b > P.loop.a ? ` ${fmt(P.loop.a)}–${fmt(P.loop.b)}` : "");
    root.querySelector(".cw-loop input").checked = P.loop.on;
    const sources = root.querySelector(".cw-sources");
    sources.innerHTML = "";
    for (const s of M.sources) {
      const b = document.createElement("button");
      b.className = "cw-source" + (s.id === P.current ? " cw-active" : "");
      b.dataset.source = s.id;
      const gain = s.gain_db ? ` (${s.gain_db > 0 ? "+" : ""}${s.gain_db.toFixed(1)} dB)` : "";
      b.textContent = (s.key ? `[${s.key.toUpperCase()}] ` : "") + (s.id === "residual" ? residualLabel(s) : s.label) + gain;
      b.onclick = () => select(s.id);
      sources.appendChild(b);
    }
    const worst = root.querySelector(".cw-worst");
    worst.innerHTML = "";
    const tl = M.timeline;
    if (tl) {
      const title = document.createElement("span");
      title.textContent = (ui.worst || "Worst moments") + ": ";
      worst.appendChild(title);
      tl.worst.forEach((m, i) => {
        const b = document.createElement("button");
        b.className = "cw-moment";
        b.dataset.time = m.time_s;
        const snr = m.seg_snr_db === null ? "" : `, SNR ${m.seg_snr_db.toFixed(1)} dB`;
        b.textContent = `${i + 1}. ${fmt(m.time_s)} · ${m.mel_distance_db.toFixed(1)} dB mel${snr}`;
        b.onclick = () => { P.loop.a = Math.max(0, m.time_s - 0.5); P.loop.b = Math.min(M.duration_s, m.time_s + 0.5); seek(P.loop.a); render(); };
        worst.appendChild(b);
      });
    }
    root.querySelector(".cw-note").textContent = ui.note || "";
    P.background = null;
    draw();
  }

  function attachCanvas(canvas) {
    const at = (e) => { const r = canvas.getBoundingClientRect(); return (e.clientX - r.left) / r.width * P.manifest.duration_s; };
    canvas.onmousedown = (e) => { P.drag = {start: at(e), moved: false}; };
    canvas.onmousemove = (e) => {
      if (!P.drag) return;
      const t = at(e);
      if (Math.abs(t - P.drag.start) > P.manifest.duration_s / 200) P.drag.moved = true;
      if (P.drag.moved) { P.loop.a = Math.min(P.drag.start, t); P.loop.b = Math.max(P.drag.start, t); draw(); }
    };
    canvas.onmouseup = (e) => {
      if (P.drag && !P.drag.moved) seek(at(e));
      else if (P.drag) { P.loop.on = true; seek(P.loop.a); render(); }
      P.drag = null;
    };
  }

  function draw() {
    const root = P.root, M = P.manifest;
    if (!root || !M || !root.querySelector(".cw-wave")) return;
    const t = time();
    root.querySelector(".cw-time").textContent = `${fmt(t)} / ${fmt(M.duration_s)}`;
    for (const canvas of root.querySelectorAll("canvas")) {
      const width = Math.max(200, canvas.clientWidth || root.clientWidth || 800);
      if (canvas.width !== width) { canvas.width = width; P.background = null; }
    }
    if (!P.background) P.background = [drawWave(root.querySelector(".cw-wave")), drawTimeline(root.querySelector(".cw-tl"))];
    for (const [i, canvas] of [...root.querySelectorAll("canvas")].entries()) {
      const g = canvas.getContext("2d", {willReadFrequently: true});
      g.putImageData(P.background[i], 0, 0);
      const x = (s) => s / M.duration_s * canvas.width;
      if (P.loop.b > P.loop.a) { g.fillStyle = "rgba(80,140,255,0.18)"; g.fillRect(x(P.loop.a), 0, x(P.loop.b) - x(P.loop.a), canvas.height); }
      g.fillStyle = "#e33"; g.fillRect(Math.round(x(t)) - 1, 0, 2, canvas.height);
    }
  }

  function axisX(canvas, M) { return (s) => s / M.duration_s * canvas.width; }

  function drawWave(canvas) {
    const g = canvas.getContext("2d", {willReadFrequently: true}), M = P.manifest, env = M.envelope, h = canvas.height;
    g.fillStyle = "#f6f6f8"; g.fillRect(0, 0, canvas.width, h);
    g.strokeStyle = "#4c72b0"; g.beginPath();
    const x = axisX(canvas, M);
    env.min.forEach((lo, i) => { const px = x((i + 0.5) * env.seconds_per_column); g.moveTo(px, h / 2 - env.max[i] * h / 2); g.lineTo(px, h / 2 - lo * h / 2 + 1); });
    g.stroke();
    seams(g, canvas, M);
    return g.getImageData(0, 0, canvas.width, h);
  }

  function drawTimeline(canvas) {
    const g = canvas.getContext("2d", {willReadFrequently: true}), M = P.manifest, tl = M.timeline, h = canvas.height;
    g.fillStyle = "#fff"; g.fillRect(0, 0, canvas.width, h);
    if (!tl) return g.getImageData(0, 0, canvas.width, h);
    const x = axisX(canvas, M);
    const top = Math.max(1, ...tl.mel_distance_db.filter((v) => v !== null));
    const curve = (values, y, colour) => {
      g.strokeStyle = colour; g.beginPath(); let pen = false;
      values.forEach((v, i) => { if (v === null) { pen = false; return; } const px = x(tl.time_s[i]); pen ? g.lineTo(px, y(v)) : g.moveTo(px, y(v)); pen = true; });
      g.stroke();
    };
    curve(tl.mel_distance_db, (v) => h - 4 - v / top * (h - 18), "#d2372c");
    curve(tl.seg_snr_db, (v) => h - 4 - (v + 10) / 45 * (h - 18), "#2e9d4f");
    seams(g, canvas, M);
    g.fillStyle = "#000";
    tl.worst.forEach((m, i) => { const px = x(m.time_s); g.fillText(String(i + 1), px - 3, 11); g.fillRect(px - 0.5, 13, 1, 6); });
    g.font = "11px sans-serif";
    const ui = M.ui || {};
    g.fillStyle = "#d2372c"; g.fillText(ui.legend_mel || "log-mel distance (dB)", 6, h - 20);
    g.fillStyle = "#2e9d4f"; g.fillText(ui.legend_snr || "segmental SNR (dB)", 6, h - 7);
    return g.getImageData(0, 0, canvas.width, h);
  }

  function seams(g, canvas, M) {
    const x = axisX(canvas, M);
    g.strokeStyle = "#999"; g.setLineDash([3, 3]); g.beginPath();
    for (const s of (M.timeline && M.timeline.seams_s) || []) { g.moveTo(x(s), 0); g.lineTo(x(s), canvas.height); }
    g.stroke(); g.setLineDash([]);
  }

  function onKey(e) {
    if (!P.manifest || e.ctrlKey || e.metaKey || e.altKey) return;
    const tag = (e.target && e.target.tagName) || "";
    if (/INPUT|TEXTAREA|SELECT/.test(tag) || (e.target && e.target.isContentEditable)) return;
    const key = e.key.toLowerCase();
    if (key === " ") { e.preventDefault(); P.playing ? pause() : play(); return; }
    if (key === "l") { P.loop.on = !P.loop.on; render(); return; }
    const s = P.manifest.sources.find((x) => x.key === key);
    if (s) { e.preventDefault(); select(s.id); }
  }

  P.mount = (root) => { P.root = root; render(); };
  P.load = (manifest) => {
    const keepTime = P.manifest && P.manifest.duration_s === manifest.duration_s ? time() : 0;
    const same = (s) => P.files[s.id] && P.files[s.id].path === s.path;
    const files = {};
    for (const s of manifest.sources) files[s.id] = same(s) ? P.files[s.id] : newFile(s.path);
    if (!(manifest.residuals || {})[P.residualOf]) P.residualOf = manifest.residual_of || "reconstruction";
    const residual = (manifest.residuals || {})[P.residualOf];
    if (files.residual && residual && files.residual.path !== residual) files.residual = newFile(residual);
    if (P.playing) pause();
    P.manifest = manifest; P.files = files; P.pos = keepTime; P.lastBlock = null;
    if (!files[P.current]) P.current = manifest.sources[0].id;
    if (P.loop.b > manifest.duration_s) P.loop = {on: false, a: 0, b: 0};
    if (P.ctx) prefetch(P.pos);
    render();
  };
  P.play = play; P.pause = pause; P.seek = seek; P.select = select; P.levels = levels;
  P.setLoop = (a, b, on = true) => { P.loop = {on, a, b}; render(); };
  P.state = () => {
    const lv = levels();
    let audible = null;
    for (const [id, value] of Object.entries(lv)) if (value > 1e-4 && (audible === null || value > lv[audible])) audible = id;
    return {source: P.current, time: time(), playing: P.playing, loop: {...P.loop}, levels: lv, audible, residualOf: P.residualOf,
      sources: P.manifest ? P.manifest.sources.map((s) => s.id) : [],
      voices: P.voices.map((v) => ({id: v.id, from: v.from, when: v.when, stopped: v.stopped}))};
  };
  document.addEventListener("keydown", onKey);
  P.timer = setInterval(tick, TICK_MS);
  return P;
}

const player = window.cwPlayer || (window.cwPlayer = createPlayer());
player.mount(element.querySelector(".cw-lab-root") || element);
const loadValue = () => {
  const value = props.value;
  if (value) player.load(typeof value === "string" ? JSON.parse(value) : value);
};
watch("value", loadValue);
loadValue();
