// The listening lab's player (the js_on_load of the gr.HTML in webui/tabs/lab.py; `element`, `props`
// and `watch` come from Gradio, the cw* functions from player_*.js, loaded before this file).
// props.value is the manifest (JSON) that webui/jobs/lab.py writes: file paths in the request
// folder, loudness gains, each source's waveform, the quality timeline, the words in the page's language.
// window.cwPlayer.state() is there for tests.

const lab = window.cwPlayer || (window.cwPlayer = cwPlayer({waveform: true, timeline: true}));
lab.mount(element.querySelector(".cw-lab-root") || element);
const loadLab = () => {
  const value = props.value;
  if (value) lab.load(typeof value === "string" ? JSON.parse(value) : value);
};
watch("value", loadLab);
loadLab();
