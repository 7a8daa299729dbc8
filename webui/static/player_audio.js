// Codec Workbench player, part 1 of 4: the audio engine. One transport over time-aligned sources,
// switched instantly with a short crossfade at the same position (the lab's A/B/R/levels, the
// blind test's A/B/X). Audio is fetched from Gradio's file route in blocks of BLOCK_S seconds with
// HTTP Range requests that stay inside the file, only around the playhead, so a 30-minute clip is
// never loaded in one piece. A file that is not a WAV is decoded whole (the blind test's X may be).
// Where the manifest has a FLAC copy of a file (manifest.listen[path]: independent FLAC streams, one
// per block, and their byte offsets; webui/jobs/pcm16_copies.py), a block is its byte range, decoded by the
// browser: lossless 16-bit PCM, exactly the samples that were measured, ≈4× fewer bytes than WAV.
// Only the sources in manifest.prefetch (the original and the reconstruction in the lab; every
// source where it is absent) and those the listener has chosen are fetched ahead.
//
// cwAudio(P) installs on the player object P: load(manifest), play, pause, seek, select, time,
// levels, tick. It calls P.render() (whole view) and P.draw() (canvases) when they exist.

const CW_BLOCK_S = 8; // seconds of audio per fetched block
const CW_AHEAD_S = 1.0; // audio scheduled this far ahead of the clock
const CW_FADE_S = 0.012; // crossfade when flipping, seeking or looping (no click)
const CW_PREFETCH_BLOCKS = 2; // blocks fetched ahead of the playhead, for every source
const CW_KEEP_BLOCKS = 16; // blocks kept per source (the farthest ones are dropped)
const CW_HEADER_BYTES = 65536; // bytes read to find a WAV file's data chunk

function cwAudio(P) {
  P.files = {}; P.current = null; P.playing = false; P.pos = 0; P.clock = null; P.voices = [];
  P.loop = {on: false, a: 0, b: 0};
  P.residualOf = "reconstruction"; // R plays original − this source (manifest.residuals: a file per source)
  P.chosen = new Set(); // sources the listener has selected: fetched ahead from then on

  function fileUrl(path) {
    if (path.startsWith("/listen/")) return path; // a shared test's sound (webui/serving/shared_test_routes.py)
    const cfg = window.gradio_config || {};
    const root = (cfg.root || location.origin + location.pathname).replace(/\/$/, "");
    return root + "/gradio_api/file=" + path.split("/").map(encodeURIComponent).join("/");
  }

  function copyOf(path, manifest) { return ((manifest || P.manifest || {}).listen || {})[path] || null; }

  function newFile(path, manifest) {
    const copy = copyOf(path, manifest);
    return {path, copy, url: fileUrl(copy ? copy.path : path), blocks: new Map(), ready: new Map()};
  }

  function audioContext() {
    if (!P.ctx) {
      const rate = P.manifest.sample_rate; // the codec's rate, from the server: no resampling of our buffers
      P.ctx = new AudioContext(rate ? {sampleRate: rate} : {});
      P.master = P.ctx.createGain();
      P.master.connect(P.ctx.destination);
    }
    return P.ctx;
  }

  // ---- files: the size, a WAV header, then blocks by byte range inside the file -------------
  async function size(file) {
    if (!file.size) file.size = fetch(file.url, {method: "HEAD"}).then((r) => Number(r.headers.get("content-length")) || 0);
    return file.size;
  }

  async function header(file) {
    if (!file.header && file.copy) { // the FLAC copy: its index is the header
      const rate = file.copy.rate || P.manifest.sample_rate; // a copy says its own rate (48 kHz decoders)
      file.header = Promise.resolve({rate, frames: file.copy.frames, offsets: file.copy.offsets});
    }
    if (!file.header) {
      file.header = size(file).then(async (bytes) => {
        const last = Math.max(0, Math.min(CW_HEADER_BYTES, bytes || CW_HEADER_BYTES) - 1);
        const r = await fetch(file.url, {headers: {Range: "bytes=0-" + last}});
        const buf = await r.arrayBuffer();
        try { return parseWav(buf); } catch (e) { return decodeWhole(file); }
      });
    }
    return file.header;
  }

  function parseWav(buf) {
    const v = new DataView(buf);
    const tag = (o) => String.fromCharCode(v.getUint8(o), v.getUint8(o + 1), v.getUint8(o + 2), v.getUint8(o + 3));
    if (buf.byteLength < 12 || tag(0) !== "RIFF" || tag(8) !== "WAVE") throw new Error("not a WAV file");
    let o = 12, fmt = null;
    while (o + 8 <= buf.byteLength) {
      const id = tag(o), chunk = v.getUint32(o + 4, true);
      if (id === "fmt ") {
        let code = v.getUint16(o + 8, true);
        if (code === 0xfffe) code = v.getUint16(o + 32, true); // WAVE_FORMAT_EXTENSIBLE: the subformat
        fmt = {code, channels: v.getUint16(o + 10, true), rate: v.getUint32(o + 12, true), bits: v.getUint16(o + 22, true)};
      } else if (id === "data" && fmt) {
        const width = fmt.bits / 8 * fmt.channels;
        return {...fmt, offset: o + 8, frames: Math.floor(chunk / width), width};
      }
      o += 8 + chunk + (chunk % 2);
    }
    throw new Error("no data chunk in the first " + CW_HEADER_BYTES + " bytes");
  }

  async function decodeWhole(file) { // any format the browser decodes: one request, one buffer
    const r = await fetch(file.url);
    const whole = await audioContext().decodeAudioData(await r.arrayBuffer());
    return {whole, rate: whole.sampleRate, frames: whole.length};
  }

  function blockFrom(h, index) {
    const first = index * CW_BLOCK_S * h.rate;
    const count = Math.max(0, Math.min(CW_BLOCK_S * h.rate, h.frames - first));
    if (count === 0) return null;
    const samples = h.whole.getChannelData(0).slice(first, first + count);
    const buffer = audioContext().createBuffer(1, count, h.rate);
    buffer.copyToChannel(samples, 0);
    return buffer;
  }

  function block(file, index) {
    if (file.blocks.has(index)) return file.blocks.get(index);
    const promise = header(file).then(async (h) => {
      if (h.whole) return blockFrom(h, index);
      if (h.offsets) return flacBlock(file, h, index);
      const first = index * CW_BLOCK_S * h.rate;
      const count = Math.max(0, Math.min(CW_BLOCK_S * h.rate, h.frames - first));
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
    promise.then((b) => { file.ready.set(index, b); }, () => { file.blocks.delete(index); });
    if (file.blocks.size > CW_KEEP_BLOCKS) { // forget the block farthest from this one
      let far = null;
      for (const k of file.blocks.keys()) if (far === null || Math.abs(k - index) > Math.abs(far - index)) far = k;
      file.blocks.delete(far); file.ready.delete(far);
    }
    return promise;
  }

  async function flacBlock(file, h, index) { // one FLAC stream: bytes offsets[index] .. offsets[index + 1] - 1
    if (index + 1 >= h.offsets.length) return null;
    const start = h.offsets[index], end = h.offsets[index + 1] - 1;
    const r = await fetch(file.url, {headers: {Range: `bytes=${start}-${end}`}});
    let bytes = await r.arrayBuffer();
    if (r.status === 200) bytes = bytes.slice(start, end + 1); // a server without ranges sent it all
    const buffer = await audioContext().decodeAudioData(bytes); // the context runs at the file's rate: no resampling
    // Chromium maps 16-bit PCM to float with 1/32767 above zero and 1/32768 below; the server (and
    // soundfile) use 1/32768 throughout. Back onto that grid, so what plays is what was measured.
    const x = buffer.getChannelData(0);
    for (let i = 0; i < x.length; i++) x[i] = Math.round(x[i] * (x[i] > 0 ? 32767 : 32768)) / 32768;
    return buffer;
  }

  function wanted(id) {
    const first = P.manifest && P.manifest.prefetch;
    return !first || first.includes(id) || P.chosen.has(id) || id === P.current;
  }

  function prefetch(at) {
    const first = Math.floor(Math.max(0, at) / CW_BLOCK_S);
    for (const [id, file] of Object.entries(P.files)) {
      if (!wanted(id)) continue; // fetched when the listener picks it
      for (let b = first; b <= first + CW_PREFETCH_BLOCKS; b++) if (b * CW_BLOCK_S < P.duration()) block(file, b);
    }
  }

  // ---- voices: one source playing from a position at a context time -------------------------
  function gainOf(id) {
    const s = P.manifest.sources.find((x) => x.id === id);
    return Math.pow(10, (s && s.gain_db ? s.gain_db : 0) / 20);
  }

  function startVoice(id, when, from) {
    const ctx = audioContext();
    const gain = ctx.createGain(), analyser = ctx.createAnalyser();
    analyser.fftSize = 2048;
    gain.gain.setValueAtTime(0, when);
    gain.gain.linearRampToValueAtTime(gainOf(id), when + CW_FADE_S);
    gain.connect(analyser); analyser.connect(P.master);
    const voice = {id, when, from, gain, analyser, nodes: [], next: from, stopped: false};
    P.voices.push(voice);
    feed(voice);
    return voice;
  }

  function feed(voice) { // schedule this voice's blocks up to CW_AHEAD_S past the clock
    const ctx = P.ctx, file = P.files[voice.id];
    const until = Math.min(P.duration(), voice.from + (ctx.currentTime + CW_AHEAD_S - voice.when));
    while (!voice.stopped && voice.next < until - 1e-6) {
      const index = Math.floor(voice.next / CW_BLOCK_S + 1e-9);
      const buffer = file.ready.get(index);
      if (!buffer) { block(file, index); return; } // not here yet: scheduled on a later tick
      const at = voice.when + (voice.next - voice.from);
      const offset = voice.next - index * CW_BLOCK_S;
      const node = ctx.createBufferSource();
      node.buffer = buffer;
      node.connect(voice.gain);
      const late = Math.max(0, ctx.currentTime - at); // a late block starts where the clock is
      if (offset + late < buffer.duration) node.start(at + late, offset + late);
      voice.nodes.push(node);
      voice.next = index * CW_BLOCK_S + buffer.duration;
    }
  }

  function stopVoice(voice, when) {
    if (voice.stopped) return;
    voice.stopped = true;
    const g = voice.gain.gain;
    g.cancelScheduledValues(when);
    g.setValueAtTime(when < voice.when + CW_FADE_S ? 0 : gainOf(voice.id), when);
    g.linearRampToValueAtTime(0, when + CW_FADE_S);
    for (const n of voice.nodes) { try { n.stop(when + CW_FADE_S + 0.01); } catch (e) { /* not started */ } }
    setTimeout(() => { voice.analyser.disconnect(); P.voices = P.voices.filter((v) => v !== voice); },
      (when - P.ctx.currentTime + CW_FADE_S) * 1000 + 200);
  }

  // ---- transport ------------------------------------------------------------------------------
  P.duration = () => (P.manifest ? P.manifest.duration_s || 0 : 0);

  P.time = () => {
    if (!P.playing || !P.clock) return P.pos;
    return Math.min(P.duration(), P.clock.from + Math.max(0, P.ctx.currentTime - P.clock.when));
  };

  function restart(at) { // the current source from `at`, now, crossfaded from whatever played
    const when = P.ctx.currentTime + 0.005;
    for (const v of P.voices) stopVoice(v, when);
    P.clock = {when, from: at};
    startVoice(P.current, when, at);
  }

  function redraw(whole) { if (whole && P.render) P.render(); else if (P.draw) P.draw(); }

  P.play = async () => {
    if (!P.manifest || P.playing || !P.current) return;
    const ctx = audioContext();
    if (ctx.state !== "running") await ctx.resume();
    if (P.pos >= P.duration() - 0.01) P.pos = P.loop.on ? P.loop.a : 0;
    prefetch(P.pos);
    await block(P.files[P.current], Math.floor(P.pos / CW_BLOCK_S));
    if (P.playing) return; // a second press while the first block came
    P.playing = true;
    restart(P.pos);
    redraw(true);
  };

  P.pause = () => {
    if (!P.playing) return;
    P.pos = P.time();
    P.playing = false;
    for (const v of P.voices) stopVoice(v, P.ctx.currentTime);
    redraw(true);
  };

  P.seek = (t) => {
    P.pos = Math.max(0, Math.min(P.duration(), t));
    prefetch(P.pos);
    if (P.playing) restart(P.pos);
    redraw(false);
  };

  function retarget(id) { // the residual against the last source chosen, heard next time R is
    const path = ((P.manifest && P.manifest.residuals) || {})[id];
    if (!path || !P.files.residual || id === P.residualOf) return;
    P.residualOf = id;
    P.files.residual = P.files.residual.path === path ? P.files.residual : newFile(path);
    if (P.chosen.has("residual")) prefetch(P.time());
  }

  P.select = (id) => {
    if (id !== "original" && id !== "residual") retarget(id);
    if (!P.files[id] || id === P.current) { redraw(true); return; }
    P.current = id;
    if (!P.chosen.has(id)) { P.chosen.add(id); if (P.ctx) prefetch(P.time()); }
    if (P.playing) { // same position, new source, crossfaded
      const when = P.ctx.currentTime + 0.005;
      const at = P.clock.from + (when - P.clock.when);
      for (const v of P.voices) stopVoice(v, when);
      P.clock = {when, from: at};
      startVoice(id, when, at);
    }
    redraw(true);
  };

  P.tick = () => {
    if (!P.playing) return;
    let t = P.time();
    if (P.loop.on && P.loop.b > P.loop.a && t >= P.loop.b) { P.seek(P.loop.a); t = P.loop.a; }
    else if (t >= P.duration() - 1e-3) { P.pos = P.duration(); P.playing = false; redraw(true); return; }
    for (const v of P.voices) if (!v.stopped) feed(v);
    if (Math.floor(t / CW_BLOCK_S) !== P.lastBlock) { P.lastBlock = Math.floor(t / CW_BLOCK_S); prefetch(t); }
    redraw(false);
  };

  P.levels = () => { // RMS of what each source's voice is playing right now
    const out = {}, data = new Float32Array(2048);
    for (const v of P.voices) {
      if (v.stopped) continue;
      v.analyser.getFloatTimeDomainData(data);
      let sum = 0;
      for (const x of data) sum += x * x;
      out[v.id] = Math.max(out[v.id] || 0, Math.sqrt(sum / data.length));
    }
    return out;
  };

  // A new manifest: the files that did not change keep their blocks; the position stays when the
  // clip is the same length (new ladder levels), else it goes back to the start.
  P.load = (manifest, keepPosition = true) => {
    const keep = keepPosition && P.manifest && P.manifest.duration_s === manifest.duration_s ? P.time() : 0;
    const copyPath = (path) => (copyOf(path, manifest) || {}).path;
    const same = (s) => P.files[s.id] && P.files[s.id].path === s.path && (P.files[s.id].copy || {}).path === copyPath(s.path);
    const files = {};
    for (const s of manifest.sources) files[s.id] = same(s) ? P.files[s.id] : newFile(s.path, manifest);
    if (!(manifest.residuals || {})[P.residualOf]) P.residualOf = manifest.residual_of || "reconstruction";
    const residual = (manifest.residuals || {})[P.residualOf];
    if (files.residual && residual && files.residual.path !== residual) files.residual = newFile(residual, manifest);
    if (!P.manifest || P.manifest.duration_s !== manifest.duration_s) { P.chosen = new Set(); P.current = null; } // another clip
    const wasPlaying = P.playing; // a fuller manifest of the same result (its first look, then the timeline) keeps playing
    if (P.playing) P.pause();
    P.manifest = manifest; P.files = files; P.pos = keep; P.lastBlock = null;
    if (!files[P.current]) { // a new result starts on manifest.start (the codec), else the first source
      P.current = files[manifest.start] ? manifest.start : manifest.sources.length ? manifest.sources[0].id : null;
    }
    if (P.loop.b > P.duration()) P.loop = {on: false, a: 0, b: 0};
    if (P.ctx) prefetch(P.pos);
    redraw(true);
    if (wasPlaying && keep > 0 && files[P.current]) P.play();
  };

  P.lengthOf = async (id) => { const h = await header(P.files[id]); return h.frames / h.rate; };
}
