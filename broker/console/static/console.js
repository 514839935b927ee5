// kbroker console: refreshes the live parts ([data-live]) of the page in place while the tab is visible.
// Server-rendered, escaped HTML replaces server-rendered HTML; nothing from a record is ever evaluated.
(function () {
  "use strict";
  var every = parseInt(document.body.getAttribute("data-refresh-ms"), 10) || 0;
  var live = document.querySelectorAll("[data-live]");
  var stamp = document.getElementById("refreshed");
  if (!every || !live.length) { return; }
  var busy = false;

  function refresh() {
    if (busy || document.visibilityState !== "visible") { return; }
    busy = true;
    fetch(window.location.href, {credentials: "same-origin", headers: {"Accept": "text/html", "X-Console-Refresh": "1"}})
      .then(function (response) {
        if (response.redirected || !response.ok) { throw new Error("status " + response.status); }
        return response.text();
      })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html");
        live.forEach(function (old) {
          var now = fresh.getElementById(old.id);
          if (now && !old.contains(document.activeElement)) {
            old.replaceChildren.apply(old, Array.prototype.slice.call(now.childNodes).map(function (n) {
              return document.importNode(n, true);
            }));
          }
        });
        if (stamp) { stamp.textContent = "Updated " + new Date().toLocaleTimeString(); }
      })
      .catch(function (err) {
        if (stamp) { stamp.textContent = "Not updated: " + err.message; }
      })
      .then(function () { busy = false; });
  }

  window.setInterval(refresh, every);
  document.addEventListener("visibilitychange", refresh);
})();
