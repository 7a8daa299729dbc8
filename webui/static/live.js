// Codec Workbench Live: the microphone through the codec as you speak (webui/tabs/live.py).
//
// Runs as the js_on_load of a gr.HTML: `element`, `props`, `watch` and `trigger` come from Gradio;
// props.value is the config the server sends on page load (texts in the page's language, limits, and the
// codec's rate and frame length: codec facts come from core.codec, never from this script).
// Capture: an AudioWorklet taps the microphone at the device's rate and the page sends BLOCK_MS
// blocks over the /live/ws WebSocket (webui/serving/live_socket.py). Playback: for every frame the
// server sends the codec's audio and the 24 kHz input of the same frame; both are scheduled at the
// same time on two gains, so "original / codec" switches at the same moment. Latency parts are
// measured as they happen: mouth-to-ear per frame is (when its audio plays + output latency) - (when
// its first sample was captured).
// window.cwLive.state() -> {running, frames, latency, level, resultId, error, hear} is there for tests.

const BLOCK_MS = 20; // microphone audio per message
const AHEAD_S = 0.03; // playback margin that absorbs jitter between frames
const MAX_QUEUE_S = 0.15; // audio queued beyond this (a burst after a stall) is dropped: live, not late
const KEEP = 50; // recent measurements kept for the medians shown
const FADE_S = 0.01; // original/codec switch crossfade
const METER_FALL_DB_S = 24; // the level meter falls this fast after a peak

const TAP = `class CwTap extends AudioWorkletProcessor {
  process(inputs) {
    const input = inputs[0];
    if (input && input.length) {
      const n = input[0].length, c = input.length, out = new Float32Array(n * c);
      for (let i = 0; i < n; i++) for (let k = 0; k < c; k++) out[i * c + k] = input[k][i];
      this.port.postMessage({samples: out, time: currentTime}, [out.buffer]);
    }
    return true;
  }
}
registerProcessor("cw-tap", CwTap);`;

function median(values) {
  if (!values.length) return null;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function createLive() {
  const L = {cfg: null, root: null, ctx: null, ws: null, stream: null, tap: null, running: false, hear: "codec",
    channels: 1, pending: [], pendingFrames: 0, voices: [], dropped: 0, packet: 1, energy: 0, received: 0, levelMax: -120, t0: null, nextPlay: 0, frames: 0, gains: null, level: -120,
    parts: {compute: [], transport: [], playback: [], total: []}, resultId: null, error: null, note: null};
  const t = (key) => (L.cfg && L.cfg.texts[key]) || key;

  function render() {
    if (!L.root || !L.cfg) return;
    L.root.innerHTML = `
      <div class="cw-live-controls">
        <button class="cw-live-start lg primary">${t("start")}</button>
        <button class="cw-live-stop lg secondary" disabled>${t("stop")}</button>
        <span class="cw-live-hear" role="radiogroup" aria-label="${t("hear")}">
          <label><input type="radio" name="cw-hear" value="original"> ${t("hear_original")}</label>
          <label><input type="radio" name="cw-hear" value="codec" checked> ${t("hear_codec")}</label>
        </span>
      </div>
      <div class="cw-live-meter" role="meter" aria-label="${t("level")}" aria-valuemin="-60" aria-valuemax="0"><div class="cw-live-level"></div><span></span></div>
      <div class="cw-live-status" aria-live="polite"></div>
      <table class="cw-live-latency"><tbody></tbody></table>`;
    L.root.querySelector(".cw-live-start").onclick = start;
    L.root.querySelector(".cw-live-stop").onclick = stop;
    L.root.querySelectorAll("input[name=cw-hear]").forEach((r) => { r.onchange = () => hear(r.value); });
    show();
  }

  function status(text, bad = false) {
    L.error = bad ? text : L.error;
    const el = L.root && L.root.querySelector(".cw-live-status");
    if (el) { el.textContent = text; el.classList.toggle("cw-live-bad", bad); }
  }

  function show() {
    if (!L.root) return;
    const start = L.root.querySelector(".cw-live-start"), stopButton = L.root.querySelector(".cw-live-stop");
    if (start) start.disabled = L.running;
    if (stopButton) stopButton.disabled = !L.running;
    const width = Math.max(0, Math.min(100, (L.level + 60) / 60 * 100));
    const bar = L.root.querySelector(".cw-live-level");
    if (bar) { bar.style.width = width + "%"; bar.classList.toggle("cw-live-clip", L.level > -1); }
    const meter = L.root.querySelector(".cw-live-meter");
    if (meter) meter.setAttribute("aria-valuenow", Math.max(-60, Math.round(L.level)));
    const meterText = L.root.querySelector(".cw-live-meter span");
    if (meterText) meterText.textContent = `${t("level")}: ${L.level > -120 ? L.level.toFixed(0) : "-∞"} dBFS`;
    const lat = latency(), body = L.root.querySelector(".cw-live-latency tbody");
    if (!body) return;
    const ms = (v) => (v === null ? "…" : `${v.toFixed(0)} ms`);
    const perPacket = (key) => (L.packet > 1 ? t(`${key}_packet`).replace("{frames}", L.packet) : t(key));
    body.innerHTML = [
      ["lat_algorithmic", lat.algorithmic_ms, t("lat_algorithmic_note"), perPacket("lat_algorithmic")],
      ["lat_compute", lat.compute_ms, L.cfg.device, perPacket("lat_compute")],
      ["lat_transport", lat.transport_ms, ""],
      ["lat_playback", lat.playback_ms, ""],
      ["lat_other", lat.other_ms, t("lat_other_note")],
      ["lat_total", lat.total_ms, t("lat_total_note")],
    ].map(([key, value, note, label]) => `<tr class="${key}"><th>${label || t(key)}</th><td>${ms(value)}</td><td>${note}</td></tr>`).join("");
  }

  function latency() {
    const m = (k) => median(L.parts[k]);
    const out = {algorithmic_ms: (L.packet * L.cfg.frame_s * 1000 + BLOCK_MS), compute_ms: m("compute"), transport_ms: m("transport"),
      playback_ms: m("playback"), total_ms: m("total"), frames: L.frames};
    const named = out.algorithmic_ms + out.compute_ms + out.transport_ms + out.playback_ms;
    out.other_ms = out.total_ms === null || out.compute_ms === null ? null : Math.max(0, out.total_ms - named);
    return out;
  }

  function keep(key, value) {
    L.parts[key].push(value);
    if (L.parts[key].length > KEEP) L.parts[key].shift();
  }

  function hear(which) {
    L.hear = which;
    if (!L.gains || !L.ctx) return;
    const now = L.ctx.currentTime;
    L.gains.original.gain.setTargetAtTime(which === "original" ? 1 : 0, now, FADE_S / 3);
    L.gains.codec.gain.setTargetAtTime(which === "codec" ? 1 : 0, now, FADE_S / 3);
  }

  async function start() {
    if (L.running) return;
    L.error = null; L.resultId = null; L.note = null; L.frames = 0; L.t0 = null; L.pending = []; L.pendingFrames = 0;
    L.voices = []; L.nextPlay = 0; L.dropped = 0; L.energy = 0; L.received = 0; L.levelMax = -120;
    for (const k of Object.keys(L.parts)) L.parts[k] = [];
    try {
      L.stream = await navigator.mediaDevices.getUserMedia({audio: {echoCancellation: false, noiseSuppression: false, autoGainControl: false}});
    } catch (e) {
      status(t("no_microphone") + ` (${e.name})`, true);
      return;
    }
    L.ctx = new AudioContext({latencyHint: "interactive"});
    await L.ctx.resume();
    const settings = L.stream.getAudioTracks()[0].getSettings();
    L.channels = Math.max(1, Math.min(2, settings.channelCount || 1));
    const url = URL.createObjectURL(new Blob([TAP], {type: "application/javascript"}));
    await L.ctx.audioWorklet.addModule(url);
    URL.revokeObjectURL(url);
    const source = L.ctx.createMediaStreamSource(L.stream);
    L.tap = new AudioWorkletNode(L.ctx, "cw-tap", {numberOfInputs: 1, numberOfOutputs: 0, channelCount: L.channels, channelCountMode: "explicit"});
    L.gains = {original: L.ctx.createGain(), codec: L.ctx.createGain()};
    L.gains.original.connect(L.ctx.destination);
    L.gains.codec.connect(L.ctx.destination);
    hear(L.hear);
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const base = (window.gradio_config && window.gradio_config.root) || location.origin + location.pathname;
    const wsUrl = base.replace(/^http/, "ws").replace(/\/$/, "") + L.cfg.path;
    const query = `?rate=${L.ctx.sampleRate}&channels=${L.channels}&lang=${encodeURIComponent(L.cfg.lang)}`;
    L.ws = new WebSocket((wsUrl.startsWith("ws") ? wsUrl : scheme + wsUrl) + query);
    L.ws.binaryType = "arraybuffer";
    L.ws.onmessage = received;
    L.ws.onclose = () => { if (L.running) { status(L.error || t("closed"), !!L.error); halt(); } };
    L.ws.onerror = () => status(t("closed"), true);
    L.tap.port.onmessage = (e) => captured(e.data);
    source.connect(L.tap);
    L.running = true;
    status(t("connecting"));
    show();
  }

  function captured({samples, time}) {
    if (!L.running || !L.ws || L.ws.readyState !== WebSocket.OPEN || !L.ready) return;
    if (L.t0 === null) L.t0 = time; // the context time of the first sample sent
    L.pending.push(samples);
    L.pendingFrames += samples.length / L.channels;
    let peak = 0;
    for (let i = 0; i < samples.length; i++) peak = Math.max(peak, Math.abs(samples[i]));
    const db = peak > 0 ? 20 * Math.log10(peak) : -120, seconds = samples.length / L.channels / L.ctx.sampleRate;
    L.level = Math.max(db, L.level - METER_FALL_DB_S * seconds); // peak meter: instant attack, steady fall
    L.levelMax = Math.max(L.levelMax, db);
    if (L.pendingFrames * 1000 < BLOCK_MS * L.ctx.sampleRate) return;
    const count = L.pending.reduce((n, p) => n + p.length, 0);
    const message = new ArrayBuffer(8 + count * 4);
    new DataView(message).setFloat64(0, performance.now(), true);
    const body = new Float32Array(message, 8);
    let o = 0;
    for (const p of L.pending) { body.set(p, o); o += p.length; }
    L.pending = []; L.pendingFrames = 0;
    L.ws.send(message);
  }

  function received(e) {
    if (typeof e.data === "string") return control(JSON.parse(e.data));
    const head = new DataView(e.data, 0, 32);
    const sentAt = head.getFloat64(0, true), compute = head.getFloat64(8, true), wait = head.getFloat64(16, true);
    const first = head.getFloat64(24, true);
    const n = (e.data.byteLength - 32) / 8;
    const original = new Float32Array(e.data, 32, n), codec = new Float32Array(e.data, 32 + n * 4, n);
    const now = L.ctx.currentTime;
    L.voices = L.voices.filter((v) => v.end > now);
    if (L.nextPlay - now > MAX_QUEUE_S) { // a burst after a stall: drop the queue, play this frame soon
      for (const v of L.voices) v.node.stop();
      L.voices = []; L.nextPlay = 0; L.dropped += 1;
    }
    const at = Math.max(L.nextPlay, now + AHEAD_S);
    for (const [which, samples] of [["original", original], ["codec", codec]]) {
      const buffer = L.ctx.createBuffer(1, n, L.cfg.sample_rate);
      buffer.copyToChannel(samples, 0);
      const node = L.ctx.createBufferSource();
      node.buffer = buffer;
      node.connect(L.gains[which]);
      node.start(at);
      L.voices.push({node, end: at + n / L.cfg.sample_rate});
    }
    L.nextPlay = at + n / L.cfg.sample_rate;
    for (let i = 0; i < n; i++) L.energy += codec[i] * codec[i];
    L.received += n;
    const out = (L.ctx.outputLatency || 0) + (L.ctx.baseLatency || 0);
    keep("compute", compute + wait);
    keep("transport", Math.max(0, performance.now() - sentAt - compute - wait));
    keep("playback", (at - now + out) * 1000);
    keep("total", (at + out - (L.t0 + first * L.cfg.frame_s)) * 1000); // first sample of the first frame in this message
    L.frames = first + n / (L.cfg.sample_rate * L.cfg.frame_s);
    show();
  }

  function control(msg) {
    if (msg.type === "ready") {
      L.ready = true;
      L.packet = msg.packet_frames || 1; // a packet is encoded once its last sample is in
      status(t("running").replace("{in_use}", msg.in_use).replace("{limit}", msg.limit));
    } else if (msg.type === "error") {
      status(msg.message, true);
      halt();
    } else if (msg.type === "done") {
      L.resultId = msg.id; L.note = msg.note;
      status(msg.note || t("done"));
      halt();
      trigger("submit", {id: msg.id});
    }
  }

  function stop() {
    if (!L.running) return;
    if (L.pending.length && L.ws && L.ws.readyState === WebSocket.OPEN) captured({samples: new Float32Array(0), time: 0});
    L.stopping = true;
    if (L.ws && L.ws.readyState === WebSocket.OPEN) L.ws.send(JSON.stringify({type: "stop"}));
    status(t("saving"));
    releaseMicrophone();
  }

  function releaseMicrophone() {
    if (L.tap) { L.tap.port.onmessage = null; L.tap.disconnect(); L.tap = null; }
    if (L.stream) { L.stream.getTracks().forEach((track) => track.stop()); L.stream = null; }
  }

  function halt() {
    L.running = false; L.ready = false; L.stopping = false; L.level = -120;
    releaseMicrophone();
    if (L.ws && L.ws.readyState === WebSocket.OPEN) L.ws.close();
    show();
  }

  L.mount = (root) => { L.root = root; render(); };
  L.configure = (cfg) => { L.cfg = cfg; render(); };
  L.start = start; L.stop = stop; L.hearWhich = hear;
  L.state = () => ({running: L.running, frames: L.frames, latency: latency(), level: L.level, levelMax: L.levelMax, resultId: L.resultId,
    error: L.error, hear: L.hear, note: L.note, dropped: L.dropped,
    codecRms: L.received ? Math.sqrt(L.energy / L.received) : 0,
    outputLatencyMs: L.ctx ? 1000 * ((L.ctx.outputLatency || 0) + (L.ctx.baseLatency || 0)) : null, sampleRate: L.ctx ? L.ctx.sampleRate : null});
  return L;
}

const live = window.cwLive || (window.cwLive = createLive());
live.mount(element.querySelector(".cw-live-root") || element);
const loadConfig = () => {
  const value = props.value;
  if (value) live.configure(typeof value === "string" ? JSON.parse(value) : value);
};
watch("value", loadConfig);
loadConfig();
