// Catalog pages: small progressive enhancements; everything works without.
(function () {
  "use strict";

  // Filter requests leave out empty fields, so URLs carry only what is set.
  document.addEventListener("htmx:configRequest", function (event) {
    if (!event.detail.elt.matches || !event.detail.elt.matches("#filters")) return;
    var params = event.detail.parameters;
    var keys = params instanceof FormData ? Array.from(params.keys()) : Object.keys(params);
    keys.forEach(function (key) {
      var values = params instanceof FormData ? params.getAll(key) : [].concat(params[key]);
      if (values.every(function (v) { return v === ""; })) {
        if (params instanceof FormData) params.delete(key); else delete params[key];
      }
    });
    if (params instanceof FormData ? params.get("sort") === "relevance" : params.sort === "relevance") {
      if (params instanceof FormData) params.delete("sort"); else delete params.sort;
    }
  });

  // "Use my location": fill the form's lat/lng from the browser, then send it.
  function armGeolocation(root) {
    if (!("geolocation" in navigator)) return;
    root.querySelectorAll("[data-geolocate]").forEach(function (button) {
      if (button.dataset.armed) return;
      button.dataset.armed = "1";
      button.hidden = false;
      button.addEventListener("click", function () {
        var form = button.closest("form");
        button.disabled = true;
        navigator.geolocation.getCurrentPosition(
          function (position) {
            form.elements.lat.value = position.coords.latitude.toFixed(5);
            form.elements.lng.value = position.coords.longitude.toFixed(5);
            form.elements.place.value = "";
            form.elements.place.required = false;
            form.requestSubmit();
          },
          function () { button.disabled = false; },
          { timeout: 10000, maximumAge: 600000 }
        );
      });
    });
  }
  // The filters' drawer: open on wide screens (where its toggle is hidden),
  // and as the shopper left it across the redraws a filter change makes.
  var drawerOpen = null;
  var wide = window.matchMedia("(min-width: 801px)");
  function placeDrawer(root) {
    var drawer = (root.querySelector && root.querySelector("#facet-drawer")) || null;
    if (!drawer) return;
    drawer.open = wide.matches || drawerOpen === true;
  }
  document.addEventListener("htmx:beforeSwap", function () {
    var drawer = document.getElementById("facet-drawer");
    if (drawer) drawerOpen = drawer.open;
  });
  wide.addEventListener("change", function () { placeDrawer(document); });
  document.addEventListener("DOMContentLoaded", function () { placeDrawer(document); });
  document.addEventListener("htmx:load", function (event) { placeDrawer(event.detail.elt); });

  // htmx gives focus back by id during the swap, while the new drawer is
  // still shut on a phone: a filter inside it gets its focus back here,
  // once the drawer is placed.
  var focusedId = null;
  document.addEventListener("focusin", function (event) {
    if (event.target.id && event.target.closest("#filters")) focusedId = event.target.id;
  });
  document.addEventListener("htmx:load", function (event) {
    var lost = !document.activeElement || document.activeElement === document.body;
    var again = focusedId && document.getElementById(focusedId);
    if (lost && again && event.detail.elt.contains(again)) again.focus();
  });

  document.addEventListener("DOMContentLoaded", function () { armGeolocation(document); });
  document.addEventListener("htmx:load", function (event) { armGeolocation(event.detail.elt); });
})();
