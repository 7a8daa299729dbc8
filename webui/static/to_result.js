() => {
  // The round trip has landed (webui/tabs/roundtrip.py): bring the verdict card to the top, so the first
  // screen after the job shows the card and the player under it (the codec's sound is the first thing a
  // presenter plays). On a phone the card is far below the button that was tapped; at 1440 × 900 the
  // player starts below the fold under the card. A screen tall enough to show the player's controls
  // keeps its place. The card and the player still grow for a moment (the verdict's reasons, the
  // waveforms) and a page too short to scroll that far at first grows with them, so the card is kept
  // at the top while they settle, until the reader scrolls, types or taps.
  const smooth = !window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  const SEE_PX = 160; // the player's transport and source buttons
  const SETTLE_MS = 4000;
  const card = () => document.querySelector("#roundtrip-verdict");
  const below = () => {
    const player = document.querySelector("#lab-player");
    return (player ? player.getBoundingClientRect().top : Infinity) + SEE_PX > window.innerHeight;
  };
  const wanted = () => {
    const c = card();
    return !!c && c.getBoundingClientRect().height > 0 && (window.innerWidth <= 768 || below());
  };
  let left = false; // the reader took over
  const stop = () => { left = true; };
  const events = ["wheel", "touchstart", "keydown", "mousedown"];
  events.forEach((e) => window.addEventListener(e, stop, {once: true, passive: true}));
  let first = true;
  const keep = () => {
    if (left || !wanted() || Math.abs(card().getBoundingClientRect().top) < 2) return;
    card().scrollIntoView({block: "start", behavior: first && smooth ? "smooth" : "auto"});
    first = false;
  };
  let tries = 0;
  const start = () => {
    const c = card();
    if (!c || c.getBoundingClientRect().height === 0) {
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
