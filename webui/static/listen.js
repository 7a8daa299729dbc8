// The shared test's listener page (webui/views/listen_page.py; the cw* player functions come from
// player_*.js, loaded before this file). CW_LISTEN: {kind, rate, words}. The server hands out only
// sound handles (webui/serving/shared_test_routes.py): nothing here knows which condition a sound is.
// MUSHRA: the reference (key R) and the sounds (keys 1..9) in one same-moment transport, a 0-100
// slider per sound, the scale's words above them. ABX: A, B and X (keys 1, 2, 3), X is A / X is B.
// window.cwListen.state() is there for tests.

const W = CW_LISTEN.words;
const base = location.pathname.replace(/\/$/, "");
const player = cwPlayer({waveform: false, timeline: false,
  answerKeys: CW_LISTEN.kind === "abx" ? {a: "#listen-answer-a", b: "#listen-answer-b"} : {}});
player.mount(element.querySelector(".cw-listen-player"));
const $ = (id) => document.getElementById(id);
let current = null; // the last state from the server
let touched = new Set(); // MUSHRA: sliders moved on this screen
// the keys (R, 1..9, Space) are said only where there is a keyboard: on a phone they are noise
const keyboard = window.matchMedia("(hover: hover) and (pointer: fine)").matches;
const keysHint = (words) => (keyboard ? " " + words : "");

async function call(path, body) {
  const r = await fetch(base + path, body === undefined ? {} :
    {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
  const data = await r.json().catch(() => ({error: r.statusText}));
  if (!r.ok) throw new Error(data.error || r.statusText);
  return data;
}

function say(text) { $("listen-status").textContent = text || ""; }
function fail(e) { $("listen-error").textContent = e.message || String(e); }

async function loadSounds(handles, labels, keys) {
  const sources = handles.map((h, i) => ({id: "s" + i, key: keys[i], label: labels[i], path: base + "/audio/" + h, gain_db: 0}));
  const manifest = {sample_rate: CW_LISTEN.rate, duration_s: 0, sources, ui: W.player};
  player.load(manifest, false);
  const seconds = await player.lengthOf("s0");
  manifest.duration_s = seconds;
  player.loop = {on: true, a: 0, b: seconds}; // the region loops
  player.resetView(); player.render();
}

function show(state) {
  current = state;
  $("listen-error").textContent = "";
  $("listen-intro").textContent = state.kind === "mushra" ? W.intro_mushra : W.intro_abx;
  $("listen-intro").hidden = false;
  $("listen-join").hidden = state.joined || state.state !== "open";
  $("listen-test").hidden = true;
  if (state.state !== "open" && !(state.joined && (state.screen !== undefined || state.trial !== undefined))) {
    say(state.state === "closed" ? W.closed : W.expired);
    return;
  }
  if (!state.joined) { say(""); return; }
  if (state.state !== "open") { say(state.state === "closed" ? W.closed : W.expired); return; }
  if ((state.kind === "mushra" && state.screen === null) || (state.kind === "abx" && state.trial === null)) {
    player.pause(); $("listen-intro").hidden = true; say(W.done); return; // the instructions go with the test
  }
  $("listen-test").hidden = false;
  if (state.kind === "mushra") showMushra(state); else showAbx(state);
}

function showMushra(state) {
  say(cwFill(W.screen, {n: state.screen + 1, total: state.screens}) + keysHint(W.keys_mushra));
  const handles = [state.reference, ...state.sounds];
  const labels = [W.reference, ...state.sounds.map((_, i) => cwFill(W.sound, {n: i + 1}))];
  const keys = ["r", ...state.sounds.map((_, i) => String(i + 1))];
  loadSounds(handles, labels, keys).catch(fail);
  touched = new Set();
  const box = $("listen-controls");
  box.innerHTML = "";
  const scale = document.createElement("div");
  scale.className = "cw-scale";
  // the words over the sliders' track: the same columns as a row below, so each word sits over its fifth
  scale.innerHTML = "<span></span><div class=\"cw-scale-words\">" + W.scale.map((w) => `<span>${w}</span>`).join("") +
    "</div><span></span>";
  box.appendChild(scale);
  state.sounds.forEach((h, i) => {
    const row = document.createElement("div");
    row.className = "cw-rate-row cw-unrated";
    const play = document.createElement("button");
    play.type = "button"; play.textContent = cwFill(W.sound, {n: i + 1});
    play.onclick = () => player.select("s" + (i + 1));
    const slider = document.createElement("input");
    Object.assign(slider, {type: "range", min: 0, max: 100, step: 1, value: 50});
    slider.dataset.handle = h;
    slider.setAttribute("aria-label", cwFill(W.sound, {n: i + 1}));
    const out = document.createElement("output");
    out.textContent = "–";
    slider.oninput = () => {
      touched.add(h); row.classList.remove("cw-unrated"); out.textContent = slider.value;
      send.disabled = touched.size < state.sounds.length;
    };
    row.append(play, slider, out);
    box.appendChild(row);
  });
  const send = document.createElement("button");
  send.type = "button"; send.id = "listen-send"; send.className = "cw-primary"; send.textContent = W.send; send.disabled = true;
  send.onclick = async () => {
    const ratings = {};
    for (const s of box.querySelectorAll("input[type=range]")) ratings[s.dataset.handle] = Number(s.value);
    send.disabled = true;
    try { player.pause(); show(await call("/rate", {screen: state.screen, ratings})); } catch (e) { fail(e); send.disabled = false; }
  };
  const hint = document.createElement("p");
  hint.className = "cw-hint"; hint.textContent = W.rate_all;
  box.append(hint, send);
}

function showAbx(state) {
  say(cwFill(W.trial, {n: state.trial + 1, total: state.trials}) + keysHint(W.keys_abx));
  loadSounds(state.sounds, ["A", "B", W.x_is], ["1", "2", "3"]).then(() => player.select("s2")).catch(fail);
  const box = $("listen-controls");
  box.innerHTML = "";
  const row = document.createElement("div");
  row.className = "cw-abx-buttons";
  for (const letter of ["A", "B"]) {
    const b = document.createElement("button");
    b.type = "button"; b.id = "listen-answer-" + letter.toLowerCase(); b.className = "cw-primary";
    b.textContent = letter === "A" ? W.answer_a : W.answer_b;
    b.onclick = async () => {
      for (const x of row.querySelectorAll("button")) x.disabled = true;
      try { player.pause(); show(await call("/abx", {trial: state.trial, answer: letter})); } catch (e) { fail(e); }
    };
    row.appendChild(b);
  }
  box.appendChild(row);
}

$("listen-join-button").onclick = async () => {
  try { show(await call("/join", {nickname: $("listen-nickname").value})); } catch (e) { fail(e); }
};
window.cwListen = {state: () => ({server: current, player: player.state(), touched: [...touched]}), player};
call("/state").then(show).catch(fail);
