// The page's messages (#toasts, a polite live region): each gets a Dismiss
// button. A confirmation fades after a while, unless the pointer or the
// keyboard is on it; a refusal stays until it is dismissed, since it says
// what did not happen and may take longer than a few seconds to read. Only
// the newest is kept (the stylesheet shows only the last one, too).
(function () {
  "use strict";

  var FADE_MS = 6000;
  var KEEP = 1;

  function dismissButton(toast) {
    var button = document.createElement("button");
    button.type = "button";
    button.className = "toast-close";
    button.setAttribute("aria-label", "Dismiss this message");
    button.textContent = "\u00d7";
    button.addEventListener("click", function () { toast.remove(); });
    toast.appendChild(button);
  }

  function fadeLater(toast) {
    var timer = null;
    function start() { timer = setTimeout(function () { toast.remove(); }, FADE_MS); }
    function hold() { clearTimeout(timer); }
    toast.addEventListener("mouseenter", hold);
    toast.addEventListener("focusin", hold);
    toast.addEventListener("mouseleave", start);
    toast.addEventListener("focusout", start);
    start();
  }

  function adopt(toast) {
    if (toast.nodeType !== 1 || !toast.classList.contains("toast")) return;
    if (toast.querySelector(".toast-close")) return;
    dismissButton(toast);
    if (!toast.classList.contains("toast-error")) fadeLater(toast);
  }

  function keepNewest(box) {
    var toasts = box.querySelectorAll(".toast");
    for (var i = 0; i < toasts.length - KEEP; i++) toasts[i].remove();
  }

  function init() {
    var box = document.getElementById("toasts");
    if (!box) return;
    box.querySelectorAll(".toast").forEach(adopt);
    keepNewest(box);
    new MutationObserver(function (changes) {
      changes.forEach(function (change) { change.addedNodes.forEach(adopt); });
      keepNewest(box);
    }).observe(box, { childList: true });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
