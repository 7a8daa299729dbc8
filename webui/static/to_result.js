() => {
  // The round trip has landed (webui/tabs/roundtrip.py): on a narrow screen the verdict card is far
  // below the button that was tapped, so the first screen after the job would look unchanged;
  // scroll the card to the top once it has a height. A wide screen keeps its place.
  if (window.innerWidth > 768) return;
  const smooth = !window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  let tries = 0;
  const go = () => {
    const card = document.querySelector("#roundtrip-verdict");
    if (card && card.getBoundingClientRect().height > 0) {
      card.scrollIntoView({block: "start", behavior: smooth ? "smooth" : "auto"});
    } else if (tries++ < 40) {
      setTimeout(go, 50);
    }
  };
  go();
}
