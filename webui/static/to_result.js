() => {
  // The round trip has landed (webui/tabs/roundtrip.py): bring the verdict card to the top, so the first
  // screen after the job shows the card and the player under it (the codec's sound is the first thing a
  // presenter plays). On a phone the card is far below the button that was tapped; at 1440 × 900 the
  // player starts below the fold under the card. A screen tall enough to show the player's controls
  // keeps its place. The card and the player still grow for a moment (the verdict's reasons, the
  // waveforms) and a page too short to scroll that far at first grows with them, so the card is kept
  // at the top while they settle, until the reader scrolls, types or taps (page.js's cwKeepInView).
  const smooth = !window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  const SEE_PX = 160; // the player's transport and source buttons
  const below = () => {
    const player = document.querySelector("#lab-player");
    return (player ? player.getBoundingClientRect().top : Infinity) + SEE_PX > window.innerHeight;
  };
  window.cwKeepInView(
    () => document.querySelector("#roundtrip-verdict"),
    (card) => {
      const r = card.getBoundingClientRect();
      return r.height > 0 && (window.innerWidth <= 768 || below()) && Math.abs(r.top) >= 2;
    },
    (card, first) => card.scrollIntoView({block: "start", behavior: first && smooth ? "smooth" : "auto"}),
    4000,
  );
}
