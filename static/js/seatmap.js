/* Seat map: keyboard navigation and an immediate flip on click.
 *
 * The map is a grid of buttons (server-rendered, usable without this script:
 * every seat is then in the tab order). With it, the grid is ONE tab stop
 * (roving tabindex): arrow keys move between seats, skipping aisles; Up and
 * Down go to the nearest seat of the next row, whatever its shape; Home/End
 * go to the ends of the row (with Ctrl: of the map). Enter and Space are the
 * buttons' own: they hold a free seat or release one of yours.
 *
 * The map is replaced by htmx every few seconds; the seat that had the tab
 * stop keeps it (by position), and htmx gives focus back by element id.
 */
(function () {
  "use strict";

  var activeKey = null; // "row-col" of the seat holding the tab stop
  var listOpen = false; // the list of seats (a <details>) as the shopper left it

  function keyOf(button) {
    return button.dataset.row + "-" + button.dataset.col;
  }

  function seatRows(grid) {
    var rows = [];
    grid.querySelectorAll(".seat-row").forEach(function (row) {
      var seats = Array.prototype.slice.call(row.querySelectorAll("button.seat"));
      if (seats.length) rows.push(seats);
    });
    return rows;
  }

  function setActive(grid, button, focus) {
    grid.querySelectorAll("button.seat").forEach(function (b) {
      b.tabIndex = -1;
    });
    button.tabIndex = 0;
    activeKey = keyOf(button);
    if (focus) button.focus();
  }

  function nearest(row, col) {
    if (!row) return null;
    var best = null;
    var bestDistance = Infinity;
    row.forEach(function (b) {
      var distance = Math.abs(Number(b.dataset.col) - col);
      if (distance < bestDistance) {
        best = b;
        bestDistance = distance;
      }
    });
    return best;
  }

  function onKeyDown(event) {
    var button = event.target.closest("button.seat");
    if (!button) return;
    var grid = event.currentTarget;
    var rows = seatRows(grid);
    var r = rows.findIndex(function (row) {
      return row.indexOf(button) !== -1;
    });
    var row = rows[r];
    var i = row.indexOf(button);
    var col = Number(button.dataset.col);
    var next;
    switch (event.key) {
      case "ArrowRight": next = row[i + 1]; break;
      case "ArrowLeft": next = row[i - 1]; break;
      case "ArrowUp": next = nearest(rows[r - 1], col); break;
      case "ArrowDown": next = nearest(rows[r + 1], col); break;
      case "Home": next = event.ctrlKey ? rows[0][0] : row[0]; break;
      case "End":
        next = event.ctrlKey ? rows[rows.length - 1].slice(-1)[0] : row[row.length - 1];
        break;
      default: return;
    }
    event.preventDefault();
    if (next) setActive(grid, next, true);
  }

  // Show the outcome at once; the server's answer redraws the map anyway
  // (and says "just taken" when another cart was faster).
  function onClick(event) {
    var button = event.target.closest("button.seat[type=submit]");
    if (!button || !window.htmx) return;
    setActive(event.currentTarget, button, false);
    button.classList.add("seat-pending");
    if (button.classList.contains("seat-free")) {
      button.classList.replace("seat-free", "seat-mine");
    } else if (button.classList.contains("seat-mine")) {
      button.classList.replace("seat-mine", "seat-free");
    }
  }

  var focusedId = null; // the control of the map that last had focus

  // A redraw brings the list back shut: keep it as the shopper left it
  // ("toggle" does not bubble, so it is caught on the way down). htmx gives
  // focus back by id during the swap, while the new list is still shut, so
  // a button inside it gets its focus back here, once the list is open.
  function keepListOpen(root) {
    var list = root.querySelector && root.querySelector("details.seat-list");
    if (!list) return;
    if (listOpen) list.open = true;
    var lost = !document.activeElement || document.activeElement === document.body;
    var again = focusedId && document.getElementById(focusedId);
    if (lost && again && root.contains(again)) again.focus({ preventScroll: true });
  }
  document.addEventListener("focusin", function (event) {
    if (event.target.id && event.target.closest("#seat-map")) {
      focusedId = event.target.id;
    }
  });
  document.addEventListener(
    "toggle",
    function (event) {
      if (event.target.matches && event.target.matches("details.seat-list")) {
        listOpen = event.target.open;
      }
    },
    true
  );

  function init(root) {
    keepListOpen(root);
    var grids = [];
    if (root.matches && root.matches("[data-seat-grid]")) grids.push(root);
    root.querySelectorAll("[data-seat-grid]").forEach(function (g) {
      grids.push(g);
    });
    grids.forEach(function (grid) {
      if (grid.dataset.ready) return;
      grid.dataset.ready = "1";
      var seats = grid.querySelectorAll("button.seat");
      if (!seats.length) return;
      var kept = null;
      if (activeKey) {
        var parts = activeKey.split("-");
        kept = grid.querySelector(
          'button.seat[data-row="' + parts[0] + '"][data-col="' + parts[1] + '"]'
        );
      }
      var first = kept || grid.querySelector("button.seat-mine, button.seat-free") || seats[0];
      setActive(grid, first, false);
      grid.addEventListener("keydown", onKeyDown);
      grid.addEventListener("click", onClick);
      grid.addEventListener("focusin", function (event) {
        var button = event.target.closest("button.seat");
        if (button) setActive(grid, button, false);
      });
    });
  }

  // The map polls every 3 s, but only while the tab is visible, and at once
  // when it becomes visible again (here rather than in a trigger filter:
  // the Content-Security-Policy allows htmx no eval).
  function pollOnlyWhenVisible() {
    document.addEventListener("htmx:beforeRequest", function (event) {
      var elt = event.detail.elt;
      if (elt && elt.id === "seat-map" && document.visibilityState !== "visible") {
        event.preventDefault();
      }
    });
    document.addEventListener("visibilitychange", function () {
      if (document.visibilityState === "visible") {
        document.dispatchEvent(new Event("seatmap-visible"));
      }
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    init(document);
  });
  pollOnlyWhenVisible();
  document.addEventListener("htmx:load", function (event) {
    init(event.detail.elt);
  });
})();
