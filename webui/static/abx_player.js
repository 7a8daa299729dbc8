// The blind test's transport (the js_on_load of the gr.HTML in webui/tabs/abx.py): A, B and X in
// one flip player, switched at the same moment and looped over the test's clip. No waveform: X's
// picture would give the answer away. The sources are the data-cw-source elements the server puts
// in #abx-references and #abx-x (a fresh X each trial); keys 1 / 2 / 3 pick A / B / X, A / B answer.
// window.cwAbx.state() is there for tests.

const abx = window.cwAbx || (window.cwAbx = cwPlayer({waveform: false, timeline: false,
  answerKeys: {a: "#abx-answer-a button, button#abx-answer-a", b: "#abx-answer-b button, button#abx-answer-b"}}));
abx.mount(element.querySelector(".cw-abx-root") || element);

function abxSources() {
  const panel = document.getElementById("abx-panel");
  const found = panel ? [...panel.querySelectorAll("[data-cw-source]")] : []; // A, B, then X
  return found.map((el) => ({id: el.dataset.cwSource, key: el.dataset.key, label: el.dataset.label,
    path: el.dataset.path, gain_db: 0}));
}

async function abxLoad() {
  const sources = abxSources();
  const ids = sources.map((s) => s.id + "=" + s.path).join("|");
  if (ids === abx.loaded) return;
  abx.loaded = ids;
  if (!sources.length) { abx.pause(); abx.manifest = null; abx.render(); return; }
  const sameClip = abx.manifest && abx.manifest.sources[0] && abx.manifest.sources[0].path === sources[0].path;
  const previous = abx.manifest;
  const holder = document.querySelector("#abx-panel [data-cw-rate]");
  const rate = holder ? Number(holder.dataset.cwRate) : 0; // the codec's rate, from the server
  const manifest = {sample_rate: rate, duration_s: sameClip ? previous.duration_s : 0, sources, ui: abxWords()};
  abx.load(manifest, false); // a new trial starts from the beginning of the clip
  abx.seek(abx.loop.on ? abx.loop.a : 0);
  requestAnimationFrame(() => abxInView());
  if (!sameClip) {
    const seconds = await abx.lengthOf(sources[0].id);
    if (abx.manifest !== manifest) return;
    manifest.duration_s = seconds;
    abx.loop = {on: true, a: 0, b: seconds};
    abx.resetView();
    abx.render();
  }
}

function abxInView(tries = 25) { // a phone: the question, the transport and both answers on one screen
  const answer = document.querySelector("#abx-answer-b"), prompt = document.getElementById("abx-prompt");
  if (!answer || !prompt) return;
  if (!answer.offsetParent) { if (tries > 0) setTimeout(() => abxInView(tries - 1), 200); return; } // not shown yet
  const r = answer.getBoundingClientRect();
  if (r.bottom > innerHeight || prompt.getBoundingClientRect().top < 0) prompt.scrollIntoView({block: "start"});
}

function abxWords() { // the server writes them, in the page's language, beside the sources
  const holder = document.querySelector("#abx-panel [data-cw-words]");
  try { return JSON.parse((holder && holder.dataset.cwWords) || "{}"); } catch (e) { return {}; }
}

const abxPanel = element.closest("#abx-panel") || document.getElementById("abx-panel");
if (abxPanel) { // the server's outputs change (a new test, a new trial); the transport's own redraws do not count
  new MutationObserver((changes) => {
    if (changes.some((c) => !abx.root.contains(c.target))) abxLoad();
  }).observe(abxPanel, {childList: true, subtree: true});
}
abxLoad();
