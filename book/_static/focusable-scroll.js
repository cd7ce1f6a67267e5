// A code block wider than the page scrolls sideways; keyboard users can only
// scroll it if it can take the focus (WCAG 2.1.1, axe rule
// scrollable-region-focusable). The theme gives such blocks tabindex="0" when
// the page loads, but a block inside a solution that is opened later (or that
// grows when the window shrinks) is missed. Check again after every click and
// resize.
(() => {
  const update = () => {
    document.querySelectorAll("article pre").forEach((pre) => {
      const scrolls =
        pre.scrollWidth > pre.clientWidth || pre.scrollHeight > pre.clientHeight;
      if (scrolls && pre.tabIndex < 0) pre.tabIndex = 0;
    });
  };
  const later = () => requestAnimationFrame(() => requestAnimationFrame(update));
  window.addEventListener("load", later);
  window.addEventListener("resize", later);
  document.addEventListener("click", later);
})();
