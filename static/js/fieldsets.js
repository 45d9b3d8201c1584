// Enter in a field of a fieldset marked data-enter-sends sends that
// fieldset's own action (its first submit button), not the form's first
// one. The staff seat map keeps one form (the seats ticked on the map go
// with every action), so without this, Enter in the sale's fields would
// block the seats instead of selling them. Without JavaScript, Enter still
// sends the form's first action; a refused one draws the page again with
// everything typed.
(function () {
  "use strict";

  document.addEventListener("keydown", function (event) {
    if (event.key !== "Enter" || event.defaultPrevented || event.isComposing) {
      return;
    }
    var field = event.target;
    if (!(field instanceof HTMLInputElement)) return;
    if (field.type === "checkbox" || field.type === "radio") return;
    var fieldset = field.closest("fieldset[data-enter-sends]");
    var button = fieldset && fieldset.querySelector('button[type="submit"]');
    if (!button) return;
    event.preventDefault();
    button.click();
  });
})();
