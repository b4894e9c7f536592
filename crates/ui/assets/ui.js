// compact-ui: the session list's filter, applied as one types. Built into the binary; no other
// script runs on these pages (the content security policy allows only this file).
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  var input = document.getElementById("filter");
  var table = document.getElementById("sessions");
  var count = document.getElementById("count");
  if (!input || !table) return;
  var rows = table.tBodies[0].rows;
  function apply() {
    var needle = input.value.trim().toLowerCase();
    var shown = 0;
    for (var i = 0; i < rows.length; i++) {
      var key = rows[i].getAttribute("data-key") || "";
      var match = needle === "" || key.indexOf(needle) !== -1;
      rows[i].hidden = !match;
      if (match) shown++;
    }
    if (count) count.textContent = shown + " of " + rows.length + " sessions shown";
  }
  input.addEventListener("input", apply);
  input.form.addEventListener("submit", function (e) {
    e.preventDefault();
    apply();
  });
});
