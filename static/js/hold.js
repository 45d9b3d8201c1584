/* The cart's hold countdown (cart page and seat map).
 *
 * The server says how many seconds are left ([data-expires-in]); the page
 * counts down from there, so a wrong clock on the shopper's device does not
 * matter. An element swapped in by htmx starts from its own figure. At zero
 * the page goes to the cart, which explains what was released. Loaded more
 * than once (the seat map redraws its panel): one timer only.
 */
(function () {
  "use strict";
  if (window.marqueeHoldCountdown) return;
  window.marqueeHoldCountdown = true;

  function tick() {
    document.querySelectorAll("[data-expires-in]").forEach(function (el) {
      if (!el.dataset.deadline) {
        el.dataset.deadline = Date.now() + Number(el.dataset.expiresIn) * 1000;
      }
      var left = Math.max(0, Math.round((Number(el.dataset.deadline) - Date.now()) / 1000));
      var out = el.querySelector(".countdown");
      if (out) out.textContent = Math.floor(left / 60) + ":" + String(left % 60).padStart(2, "0");
      if (left === 0 && !el.dataset.done) {
        el.dataset.done = "1";
        window.location.href = el.dataset.expiredUrl;
      }
    });
  }
  tick();
  setInterval(tick, 1000);
})();
