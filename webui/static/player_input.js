// Codec Workbench player, part 3 of 4: input. Pointer (mouse, pen, touch) on the canvases: a tap
// seeks, a drag selects the loop region, two fingers pinch-zoom and pan, Ctrl+wheel (a trackpad
// pinch) zooms, Shift+wheel pans, a double click shows the whole clip. Keys act only while this
// player is on screen (its tab is the one shown) and no text field has the focus; a player whose
// tab is left pauses. Each player has its own keys (P.options.keys): the lab's never reach the
// blind test and the other way round.
//
// cwInput(P) installs: attach(canvas), onKey(event), watchVisibility().

const CW_DRAG_PX = 6; // a pointer that moved less than this is a tap (seek), more is a selection

function cwInput(P) {
  const pointers = new Map(); // pointerId -> {x, y} of the pointers down on a canvas
  let gesture = null; // {kind: "drag" | "pinch", ...}

  P.visible = () => !!P.root && P.root.isConnected && P.root.getClientRects().length > 0 && !document.hidden;

  function pinchOf(canvas) {
    const [p, q] = [...pointers.values()];
    return {centre: P.timeAt(canvas, (p.x + q.x) / 2), width: Math.max(1, Math.abs(p.x - q.x))};
  }

  P.attach = (canvas) => {
    canvas.style.touchAction = "pan-y"; // vertical swipes still scroll the page; the rest is ours
    canvas.addEventListener("pointerdown", (e) => {
      if (!P.manifest || e.button > 0) return;
      canvas.setPointerCapture(e.pointerId);
      pointers.set(e.pointerId, {x: e.clientX, y: e.clientY});
      if (pointers.size === 1) gesture = {kind: "drag", x0: e.clientX, start: P.timeAt(canvas, e.clientX), moved: false};
      else if (pointers.size === 2) gesture = {kind: "pinch", ...pinchOf(canvas)};
    });
    canvas.addEventListener("pointermove", (e) => {
      if (!pointers.has(e.pointerId) || !gesture) return;
      pointers.set(e.pointerId, {x: e.clientX, y: e.clientY});
      if (gesture.kind === "pinch" && pointers.size === 2) {
        const now = pinchOf(canvas);
        P.zoom(now.width / gesture.width, gesture.centre);
        P.pan(gesture.centre - P.timeAt(canvas, [...pointers.values()].reduce((s, p) => s + p.x, 0) / 2));
        gesture = {kind: "pinch", ...pinchOf(canvas)};
      } else if (gesture.kind === "drag") {
        if (Math.abs(e.clientX - gesture.x0) > CW_DRAG_PX) gesture.moved = true;
        if (gesture.moved) {
          const t = P.timeAt(canvas, e.clientX);
          P.loop.a = Math.min(gesture.start, t); P.loop.b = Math.max(gesture.start, t);
          P.draw();
        }
      }
    });
    const end = (e) => {
      if (!pointers.has(e.pointerId)) return;
      pointers.delete(e.pointerId);
      if (gesture && gesture.kind === "drag" && e.type === "pointerup") {
        if (!gesture.moved) P.seek(P.timeAt(canvas, e.clientX));
        else { P.loop.on = true; P.seek(P.loop.a); P.render(); }
      }
      if (pointers.size === 0) gesture = null;
      else if (gesture && gesture.kind === "pinch") gesture = {kind: "none"}; // one finger left: wait for both up
    };
    canvas.addEventListener("pointerup", end);
    canvas.addEventListener("pointercancel", end);
    canvas.addEventListener("wheel", (e) => {
      if (!P.manifest) return;
      if (e.ctrlKey) { e.preventDefault(); P.zoom(Math.exp(-e.deltaY / 200), P.timeAt(canvas, e.clientX)); }
      else if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
        e.preventDefault();
        const span = P.view.b - P.view.a;
        P.pan(((e.deltaX || e.deltaY) / canvas.clientWidth) * span);
      }
    }, {passive: false});
    canvas.addEventListener("dblclick", () => P.resetView());
  };

  function typing() {
    const el = document.activeElement;
    if (!el) return false;
    return /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName) || el.isContentEditable;
  }

  P.onKey = (e) => {
    if (!P.manifest || e.ctrlKey || e.metaKey || e.altKey || e.defaultPrevented || !P.visible() || typing()) return;
    const key = e.key.toLowerCase();
    const answer = (P.options.answerKeys || {})[key];
    if (answer) { // the blind test: A / B answer while the buttons are there
      const button = document.querySelector(answer);
      if (button && button.getClientRects().length) { e.preventDefault(); button.click(); }
      return;
    }
    if (key === " ") { e.preventDefault(); if (P.playing) P.pause(); else P.play(); return; }
    if (key === "l") { e.preventDefault(); P.loop.on = !P.loop.on; P.render(); return; }
    if (key === "+" || key === "=") { e.preventDefault(); P.zoom(2, P.time()); return; }
    if (key === "-") { e.preventDefault(); P.zoom(0.5, P.time()); return; }
    const s = P.manifest.sources.find((x) => x.key === key);
    if (s) { e.preventDefault(); P.select(s.id); }
  };

  P.watchVisibility = () => { // leaving the tab (or the section going away) pauses
    if (P.playing && !P.visible()) P.pause();
  };
}
