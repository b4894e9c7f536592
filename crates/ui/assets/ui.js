// compact-ui: the session list's filter and the session log's search, both as one types. Built
// into the binary; no other script runs on these pages (the content security policy allows only
// this file, and requests to this server only).
"use strict";

// Milliseconds of quiet typing before the search asks the server.
var SEARCH_DELAY_MS = 250;
// Shortest query searched as one types (a one-letter search matches nearly everything).
var SEARCH_MIN_CHARS = 2;

function setUpFilter() {
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
}

function setUpSearch() {
  var input = document.getElementById("search");
  var live = document.getElementById("live");
  if (!input || !live || !window.fetch) return;
  var timer = null;
  var latest = 0;
  input.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(function () {
      var q = input.value.trim();
      var ticket = ++latest;
      if (q.length < SEARCH_MIN_CHARS) {
        live.replaceChildren();
        return;
      }
      var url = input.form.action + "?part=results&q=" + encodeURIComponent(q);
      fetch(url, { credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.text() : ""; })
        .then(function (html) {
          if (ticket !== latest) return; // A newer query was typed meanwhile.
          // The server escaped every text; parsing detached and moving the nodes in runs nothing
          // (and the policy forbids inline script anyway).
          var doc = new DOMParser().parseFromString(html, "text/html");
          live.replaceChildren.apply(live, Array.prototype.slice.call(doc.body.childNodes));
        });
    }, SEARCH_DELAY_MS);
  });
}

document.addEventListener("DOMContentLoaded", function () {
  setUpFilter();
  setUpSearch();
});
