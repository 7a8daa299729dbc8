// "Blind-test this clip" (webui/tabs/abx_page.py): the region from the lab's player before the
// event goes to the server: the whole clip (0, 0), its loop, or WORST_REGION_S around a worst
// moment (HALF is half of it, filled in by Python); -1, -1 says "no loop drawn".
(audio, what, start, end, trials, level) => {
  const p = window.cwPlayer, m = p && p.manifest, s = p ? p.state() : null;
  let a = 0, b = 0;
  if (what === "loop") { [a, b] = s && s.loop.b > s.loop.a ? [s.loop.a, s.loop.b] : [-1, -1]; }
  else if (what && what.startsWith("worst") && m && m.timeline) {
    const w = m.timeline.worst[Number(what.slice(5)) - 1];
    if (w) {
      a = Math.max(0, Math.min(w.time_s - HALF, m.duration_s - 2 * HALF));
      b = Math.min(m.duration_s, a + 2 * HALF);
    }
  }
  return [audio, what, a, b, trials, level];
}
