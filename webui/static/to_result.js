() => {
  // The round trip has landed (webui/tabs/roundtrip.py): bring the verdict card to the top once it has
  // a height, so the first screen after the job shows the card and the player under it (the codec's
  // sound is the first thing a presenter plays). On a phone the card is far below the button that was
  // tapped; at 1440 × 900 the player starts below the fold under the card. A screen tall enough to
  // show the player's controls already keeps its place.
  const smooth = !window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  const SEE_PX = 160; // the player's transport and source buttons
  let tries = 0;
  const go = () => {
    const card = document.querySelector("#roundtrip-verdict");
    const player = document.querySelector("#lab-player");
    if (card && card.getBoundingClientRect().height > 0) {
      const narrow = window.innerWidth <= 768;
      const playerTop = player ? player.getBoundingClientRect().top : Infinity;
      if (narrow || playerTop + SEE_PX > window.innerHeight) {
        card.scrollIntoView({block: "start", behavior: smooth ? "smooth" : "auto"});
      }
    } else if (tries++ < 40) {
      setTimeout(go, 50);
    }
  };
  go();
}
