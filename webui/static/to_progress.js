() => {
  // *Encode → Decode* was pressed (webui/tabs/roundtrip.py): the progress box appears under the button.
  // On a phone the button is often at the bottom edge of the screen, and the box then opened below
  // the fold. Bring the whole box into view, moving the page as little as possible, and keep it there
  // while its first lines arrive (it grows), until the reader scrolls, types or taps.
  const SETTLE_MS = 3000;
  const found = () => document.querySelector("#roundtrip-progress .cw-progress");
  let left = false; // the reader took over
  const stop = () => { left = true; };
  const events = ["wheel", "touchstart", "keydown", "mousedown"];
  events.forEach((e) => window.addEventListener(e, stop, {once: true, passive: true}));
  const keep = () => {
    const box = found();
    if (left || !box) return;
    const r = box.getBoundingClientRect();
    if (r.height > 0 && (r.top < 0 || r.bottom > window.innerHeight)) box.scrollIntoView({block: "nearest"});
  };
  let tries = 0;
  const start = () => {
    const box = found();
    if (!box || box.getBoundingClientRect().height === 0) {
      if (tries++ < 40) setTimeout(start, 50);
      return;
    }
    keep();
    const grows = new ResizeObserver(keep);
    grows.observe(document.body);
    setTimeout(() => {
      grows.disconnect();
      events.forEach((e) => window.removeEventListener(e, stop));
    }, SETTLE_MS);
  };
  start();
}
