() => {
  // The page's keyboard and tab list (run once on load, webui/app.py): one tab stop for the tab
  // list (the selected tab; arrow keys, Home and End move between tabs, as WAI-ARIA's tabs
  // pattern says), and Gradio's hidden copy of the tab buttons (it measures them for its overflow
  // menu) never takes the focus. Gradio redraws the tabs, so this follows its changes.
  if (window.__cwPage) return;
  window.__cwPage = true;
  const tabsOf = (list) => [...list.querySelectorAll('button[role="tab"]')].filter((b) => !b.disabled);
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
  new MutationObserver(roving).observe(document.body, {subtree: true, childList: true, attributes: true,
    attributeFilter: ["aria-selected"]});
  roving();
}
