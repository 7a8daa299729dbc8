() => {
  // The page's keyboard, tab list and text alternatives (run once on load, webui/app.py): one tab stop for the tab
  // list (the selected tab; arrow keys, Home and End move between tabs, as WAI-ARIA's tabs
  // pattern says), and Gradio's hidden copy of the tab buttons (it measures them for its overflow
  // menu) never takes the focus. Gradio redraws the tabs, so this follows its changes.
  if (window.__cwPage) return;
  window.__cwPage = true;
  // Keep an element in view while the page settles after a step (a result lands, a job starts), until
  // the reader scrolls, types or taps (webui/static/to_result.js, to_progress.js): ``find()`` gives the
  // element (none until it shows), ``off(el)`` whether it needs moving, ``move(el, first)`` moves it.
  window.cwKeepInView = (find, off, move, settleMs) => {
    let left = false; // the reader took over
    const stop = () => { left = true; };
    const events = ["wheel", "touchstart", "keydown", "mousedown"];
    events.forEach((e) => window.addEventListener(e, stop, {once: true, passive: true}));
    let first = true;
    const keep = () => {
      const el = find();
      if (left || !el || !off(el)) return;
      move(el, first);
      first = false;
    };
    let tries = 0;
    const start = () => {
      const el = find();
      if (!el || el.getBoundingClientRect().height === 0) {
        if (tries++ < 40) setTimeout(start, 50);
        return;
      }
      keep();
      const grows = new ResizeObserver(keep);
      grows.observe(document.body);
      setTimeout(() => {
        grows.disconnect();
        events.forEach((e) => window.removeEventListener(e, stop));
      }, settleMs);
    };
    start();
  };
  const tabsOf = (list) => [...list.querySelectorAll('button[role="tab"]')].filter((b) => !b.disabled && b.offsetParent);
  const roving = () => {
    for (const copy of document.querySelectorAll('.tab-container[aria-hidden="true"] button')) copy.tabIndex = -1;
    for (const list of document.querySelectorAll('[role="tablist"]')) {
      const tabs = tabsOf(list);
      const current = tabs.find((b) => b.getAttribute("aria-selected") === "true") || tabs[0];
      for (const b of tabs) {
        const want = b === current ? 0 : -1;
        if (b.tabIndex !== want) b.tabIndex = want;
      }
    }
  };
  document.addEventListener("keydown", (e) => {
    const tab = e.target && e.target.closest && e.target.closest('[role="tablist"] button[role="tab"]');
    if (!tab) return;
    const tabs = tabsOf(tab.closest('[role="tablist"]'));
    const at = tabs.indexOf(tab);
    const to = {ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: tabs.length - 1}[e.key];
    if (to === undefined) return;
    e.preventDefault();
    const next = tabs[(to + tabs.length) % tabs.length];
    next.click();
    next.focus();
  });
  // Pictures Gradio shows (a spectrogram, the token usage) get the name of their block as their
  // text alternative, in the page's language; a region that scrolls sideways (a wide table on a
  // phone) gets a tab stop, so that the keyboard can scroll it too.
  const label = (el) => {
    const block = el.closest(".block");
    const text = block && block.querySelector('[data-testid="block-label"]');
    return text ? text.textContent.trim() : "";
  };
  const describe = () => {
    for (const img of document.querySelectorAll(".image-container img")) {
      const name = label(img);
      if (name && img.alt !== name) img.alt = name;
      const button = img.closest("button");
      if (button && name && button.getAttribute("aria-label") !== name) button.setAttribute("aria-label", name);
    }
    for (const el of document.querySelectorAll(".prose table, .block.padded")) {
      const scrolls = el.scrollWidth > el.clientWidth + 1 && /auto|scroll/.test(getComputedStyle(el).overflowX);
      if (scrolls && !el.hasAttribute("tabindex")) el.tabIndex = 0;
    }
  };
  // Gradio's toasts title themselves "Error", "Warning", "Info" in every language: the page's
  // language's words instead (TOAST_TITLES, filled in from the catalogues by webui/app.py).
  const titles = TOAST_TITLES[document.documentElement.lang] || TOAST_TITLES.en;
  // On a wide screen messages land bottom right: top right they covered *Encode -> Decode* and the
  // box under it (the toasts live outside the part of the page the app's CSS reaches).
  const place = () => {
    const wrap = document.querySelector(".toast-wrap");
    if (!wrap) return;
    const wide = window.innerWidth >= 900;
    if (wrap.style.top !== (wide ? "auto" : "")) {
      wrap.style.top = wide ? "auto" : "";
      wrap.style.bottom = wide ? "var(--size-4)" : "";
    }
  };
  const retitle = () => {
    for (const title of document.querySelectorAll(".toast-title")) {
      const kind = ["error", "warning", "info", "success"].find((k) => title.classList.contains(k));
      const node = [...title.childNodes].find((n) => n.nodeType === Node.TEXT_NODE && n.nodeValue.trim());
      if (kind && titles[kind] && node && node.nodeValue.trim() !== titles[kind]) node.nodeValue = titles[kind] + " ";
    }
  };
  // The presenter view: only what an audience needs (Round trip, Live, Blind test; page.css says what
  // folds away). ?view=presenter or ?view=all in the address, else this browser's last choice.
  const view = VIEW_WORDS[document.documentElement.lang] || VIEW_WORDS.en;
  const asked = new URLSearchParams(location.search).get("view");
  let presenter = asked ? asked === "presenter" : localStorage.getItem("cw-view") === "presenter";
  const toggle = document.createElement("button");
  toggle.type = "button";
  toggle.id = "cw-view-toggle";
  toggle.textContent = view.presenter;
  toggle.title = view.hint;
  const applyView = () => {
    document.body.classList.toggle("cw-presenter", presenter);
    toggle.setAttribute("aria-pressed", presenter ? "true" : "false");
    const selected = document.querySelector('[role="tablist"] button[role="tab"][aria-selected="true"]');
    if (presenter && selected && !selected.offsetParent) { // a folded tab was open: back to the round trip
      const first = document.querySelector('[role="tablist"] button[role="tab"][data-tab-id="roundtrip"]');
      if (first) first.click();
    }
  };
  toggle.onclick = () => {
    presenter = !presenter;
    localStorage.setItem("cw-view", presenter ? "presenter" : "all");
    applyView();
  };
  const placeToggle = () => { // Gradio may draw the intro again: the switch stays in it
    const intro = document.getElementById("app-intro");
    if (intro && !intro.contains(toggle)) { intro.prepend(toggle); applyView(); }
  };
  // The example clips are said in words ("A man's voice · 7 s"); Gradio takes their labels as plain
  // text, so the page puts the reader's language's words over the English ones (EXAMPLE_WORDS, from
  // the catalogues' input.example.* by webui/app.py).
  const exampleWords = EXAMPLE_WORDS[document.documentElement.lang] || {};
  const relabel = () => {
    if (!Object.keys(exampleWords).length) return;
    for (const button of document.querySelectorAll("button.gallery-item")) {
      const walk = document.createTreeWalker(button, NodeFilter.SHOW_TEXT);
      for (let node = walk.nextNode(); node; node = walk.nextNode()) {
        const words = exampleWords[node.nodeValue.trim()];
        if (words) node.nodeValue = words;
      }
    }
  };
  let pending = false;
  const later = () => { // at most once a frame, whatever Gradio redraws
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; placeToggle(); roving(); describe(); retitle(); place(); relabel(); });
  };
  new MutationObserver(later).observe(document.body, {subtree: true, childList: true, attributes: true,
    attributeFilter: ["aria-selected", "src", "open"]});
  window.addEventListener("resize", later);
  later();
}
