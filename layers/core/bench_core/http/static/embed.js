// Refresh the widget in place: fetch this same URL (a 304 when nothing changed) and swap the
// panel. Fails quietly: a widget on someone else's page must never throw into their console.
(function () {
  "use strict";
  var panel = document.getElementById("panel");
  var seconds = panel ? parseInt(panel.getAttribute("data-refresh"), 10) : 0;
  if (!seconds || !window.fetch || !window.DOMParser) { return; }
  function refresh() {
    if (document.hidden) { return; }
    fetch(window.location.href, { cache: "no-cache", credentials: "omit" })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (!html) { return; }
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("panel");
        var current = document.getElementById("panel");
        if (fresh && current && fresh.innerHTML !== current.innerHTML) {
          current.replaceWith(document.adoptNode(fresh));
        }
      })
      .catch(function () { /* offline or blocked: keep showing the last numbers */ });
  }
  setInterval(refresh, seconds * 1000);
}());
