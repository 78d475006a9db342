// The System page's status is replaced every 2 s: reopen the worker details the reader opened.
(() => {
  "use strict";
  const opened = new Set();
  document.addEventListener("toggle", (e) => {
    if (!e.target.id || !e.target.matches("#system-status details")) return;
    if (e.target.open) opened.add(e.target.id); else opened.delete(e.target.id);
  }, true);
  document.addEventListener("htmx:afterSwap", () => {
    for (const id of opened) {
      const details = document.getElementById(id);
      if (details) details.open = true;
    }
  });
})();
