() => {
  // *Encode → Decode* was pressed (webui/tabs/roundtrip.py): the progress box appears under the button.
  // On a phone the button is often at the bottom edge of the screen, and the box then opened below
  // the fold. Bring the whole box into view, moving the page as little as possible, and keep it there
  // while its first lines arrive (it grows), until the reader scrolls, types or taps (page.js's cwKeepInView).
  // Only the job's own box: a refusal or the line after a job never moves the page (the next file's
  // refusal came while this kept watching, and the page moved under a finger on its way to the button).
  window.cwKeepInView(
    () => document.querySelector("#roundtrip-progress .cw-progress:not([data-state=done]):not([data-state=refused])"),
    (box) => {
      const r = box.getBoundingClientRect();
      return r.height > 0 && (r.top < 0 || r.bottom > window.innerHeight);
    },
    (box) => box.scrollIntoView({block: "nearest"}),
    3000,
  );
}
