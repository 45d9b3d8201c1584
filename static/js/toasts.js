// The page's messages (#toasts, a polite live region): each gets a Dismiss
// button. A confirmation fades after a while, unless the pointer or the
// keyboard is on it; a refusal stays until it is dismissed, since it says
// what did not happen and may take longer than a few seconds to read. Only
// the newest is kept (the stylesheet shows only the last one, too).
(function () {
  "use strict";

  var FADE_MS = 6000;
  var KEEP = 1;

  // Where focus was before it came into a toast: it goes back there when
  // the toast goes, never to the top of the page.
  var focusBefore = null;

  function removeToast(toast) {
    var hadFocus = toast.contains(document.activeElement);
    toast.remove();
    if (hadFocus && focusBefore && document.contains(focusBefore)) {
      focusBefore.focus();
    }
  }

  function dismissButton(toast) {
    var button = document.createElement("button");
    button.type = "button";
    button.className = "toast-close";
    button.setAttribute("aria-label", "Dismiss this message");
    button.textContent = "\u00d7";
    button.addEventListener("click", function () { removeToast(toast); });
    toast.appendChild(button);
    toast.addEventListener("focusin", function (event) {
      if (event.relatedTarget && !toast.contains(event.relatedTarget)) {
        focusBefore = event.relatedTarget;
      }
    });
  }

  // Fades after FADE_MS, counted again from when neither the pointer nor
  // the keyboard is on it.
  function fadeLater(toast) {
    var timer = null;
    var hovered = false;
    var focused = false;
    function schedule() {
      clearTimeout(timer);
      if (!hovered && !focused) {
        timer = setTimeout(function () { removeToast(toast); }, FADE_MS);
      }
    }
    toast.addEventListener("mouseenter", function () { hovered = true; schedule(); });
    toast.addEventListener("mouseleave", function () { hovered = false; schedule(); });
    toast.addEventListener("focusin", function () { focused = true; schedule(); });
    toast.addEventListener("focusout", function (event) {
      focused = toast.contains(event.relatedTarget);
      schedule();
    });
    schedule();
  }

  function adopt(toast) {
    if (toast.nodeType !== 1 || !toast.classList.contains("toast")) return;
    if (toast.querySelector(".toast-close")) return;
    dismissButton(toast);
    if (!toast.classList.contains("toast-error")) fadeLater(toast);
  }

  function keepNewest(box) {
    var toasts = box.querySelectorAll(".toast");
    for (var i = 0; i < toasts.length - KEEP; i++) removeToast(toasts[i]);
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
