// The page's messages (#toasts): each gets a Dismiss button. A confirmation
// fades after a while, unless the pointer or the keyboard is on it; a
// refusal stays until it is dismissed, since it says what did not happen
// and may take longer than a few seconds to read. Only the newest is kept
// (the stylesheet shows only the last one, too).
//
// What a screen reader hears is the message alone: a message that arrives
// is read from a live region of its own (#toast-announcer), so the Dismiss
// button added to it is never announced. The page keeps room below its
// last line for the message on screen (--toast-space), so a message that
// stays never covers it.
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

  function isToast(node) {
    return node.nodeType === 1 && node.classList.contains("toast");
  }

  function adopt(toast) {
    if (!isToast(toast) || toast.querySelector(".toast-close")) return;
    dismissButton(toast);
    if (!toast.classList.contains("toast-error")) fadeLater(toast);
  }

  // A new element each time, so the same message twice is read twice.
  function announce(announcer, toast) {
    var said = document.createElement("p");
    said.textContent = toast.textContent.trim();
    announcer.replaceChildren(said);
  }

  // Room below the page's last line for the message on screen: its height
  // and the gap under it (none when no message shows).
  function reserveSpace(box) {
    var shown = box.querySelector(".toast:last-child");
    var space = 0;
    if (shown) {
      space = window.innerHeight - shown.getBoundingClientRect().top;
    }
    document.body.style.setProperty("--toast-space", Math.ceil(space) + "px");
  }

  function keepNewest(box) {
    var toasts = box.querySelectorAll(".toast");
    for (var i = 0; i < toasts.length - KEEP; i++) removeToast(toasts[i]);
  }

  function init() {
    var box = document.getElementById("toasts");
    if (!box) return;
    // The announcer reads what arrives; the box itself no longer does
    // (it would read the Dismiss buttons too).
    var announcer = document.createElement("div");
    announcer.id = "toast-announcer";
    announcer.className = "visually-hidden";
    announcer.setAttribute("aria-live", "polite");
    document.body.appendChild(announcer);
    box.removeAttribute("aria-live");

    box.querySelectorAll(".toast").forEach(adopt);
    keepNewest(box);
    reserveSpace(box);
    new MutationObserver(function (changes) {
      changes.forEach(function (change) {
        change.addedNodes.forEach(function (node) {
          if (!isToast(node)) return;
          announce(announcer, node);
          adopt(node);
        });
      });
      keepNewest(box);
      reserveSpace(box);
    }).observe(box, { childList: true });
    window.addEventListener("resize", function () { reserveSpace(box); });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
