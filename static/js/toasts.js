// The page's messages (#toasts): each gets a Dismiss button. A confirmation
// fades after a while, unless the pointer or the keyboard is on it; a
// refusal stays until it is dismissed, since it says what did not happen
// and may take longer than a few seconds to read. Only the newest is kept
// (the stylesheet shows only the last one, too).
//
// What a screen reader hears is the message alone: a message that arrives
// is read from a live region of its own (#toast-announcer; a refusal from
// the assertive #toast-alarm), so the Dismiss button added to it is never
// announced. A message the page came with (a form posted without htmx,
// then its redirect) is read too, once the page has loaded. The page keeps
// room below its last line for the message on screen (--toast-space), so a
// message that stays never covers it, nor the control that has focus.
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

  // The message without its Dismiss button.
  function words(toast) {
    var copy = toast.cloneNode(true);
    copy.querySelectorAll(".toast-close").forEach(function (button) { button.remove(); });
    return copy.textContent.trim();
  }

  // Read from the live regions on every page (templates/base.html): a
  // refusal at once, as an alert would, a confirmation when the reader is
  // idle. A new element each time, so the same message twice is read twice;
  // it goes with its toast, so a region never holds a message already gone.
  function announce(toast) {
    var urgent = toast.classList.contains("toast-error");
    var said = document.createElement("p");
    said.textContent = words(toast);
    document.getElementById(urgent ? "toast-alarm" : "toast-announcer").replaceChildren(said);
    spoken.set(toast, said);
  }

  // Room below the page's last line for the message on screen: its height
  // and the gap under it (none when no message shows). Set on the root: the
  // body's padding and the window's scroll padding (the stylesheet) both
  // read it.
  function reserveSpace() {
    var shown = document.querySelector("#toasts > .toast:last-child");
    var space = shown ? window.innerHeight - shown.getBoundingClientRect().top : 0;
    document.documentElement.style.setProperty("--toast-space", Math.ceil(space) + "px");
  }

  function keepNewest(box) {
    var toasts = box.querySelectorAll(".toast");
    for (var i = 0; i < toasts.length - KEEP; i++) removeToast(toasts[i]);
  }

  // The message the page came with, read once the page has loaded: a
  // screen reader reads a new page from its top and does not announce
  // what a live region held from the start, so the words go in afterwards.
  function announceLoaded(box) {
    var toast = box.querySelector(".toast:last-child");
    if (!toast) return;
    function speak() {
      if (box.contains(toast)) announce(toast);
    }
    if (document.readyState === "complete") {
      requestAnimationFrame(speak);
    } else {
      window.addEventListener("load", function () { requestAnimationFrame(speak); }, { once: true });
    }
  }

  var spoken = new WeakMap();
  var watching = null;

  // Run again when htmx puts back a page from its history (the Back
  // button): the body is then a copy of the page as it was, with a new
  // #toasts to watch and the toasts of that moment, which are gone.
  function init() {
    var box = document.getElementById("toasts");
    if (!box) return;
    // The regions read what arrives; the box itself no longer does (it
    // would read the Dismiss buttons too).
    box.removeAttribute("aria-live");
    box.querySelectorAll(".toast").forEach(adopt);
    keepNewest(box);
    announceLoaded(box);
    reserveSpace();
    if (watching) watching.disconnect();
    watching = new MutationObserver(function (changes) {
      changes.forEach(function (change) {
        change.addedNodes.forEach(function (node) {
          if (!isToast(node)) return;
          announce(node);
          adopt(node);
        });
        change.removedNodes.forEach(function (node) {
          var said = spoken.get(node);
          if (said) said.remove();
        });
      });
      keepNewest(box);
      reserveSpace();
    });
    watching.observe(box, { childList: true });
  }

  window.addEventListener("resize", reserveSpace);
  document.addEventListener("htmx:historyRestore", function () {
    document.querySelectorAll("#toasts > .toast, #toast-announcer > *, #toast-alarm > *")
      .forEach(function (old) { old.remove(); });
    init();
  });

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
