// The build log of a deployment page, live: an EventSource on the API's log stream (the session cookie
// authenticates it). It starts after the last line the page rendered (`lastEventId`); after a dropped
// connection the browser reconnects with Last-Event-ID, so no line is lost or repeated. On `end` the
// summary (status, address, timeline, findings) is refreshed with htmx, or the page reloads without it.
(function () {
  "use strict";
  var log = document.getElementById("build-log");
  if (!log || log.dataset.finished === "true" || !window.EventSource) return;
  var state = document.getElementById("log-state");
  var last = parseInt(log.dataset.lastEventId || "0", 10);
  var url = log.dataset.streamUrl + "?lastEventId=" + encodeURIComponent(last);
  var source = new EventSource(url, { withCredentials: true });

  function atBottom() { return log.scrollHeight - log.scrollTop - log.clientHeight < 40; }

  source.addEventListener("log", function (event) {
    var seq = parseInt(event.lastEventId || "0", 10);
    if (seq && seq <= last) return;
    last = seq || last;
    var follow = atBottom();
    var line = document.createElement("span");
    line.className = "log-line";
    line.dataset.seq = String(seq);
    line.textContent = event.data;
    log.appendChild(line);
    log.appendChild(document.createTextNode("\n"));
    if (follow) log.scrollTop = log.scrollHeight;
  });

  source.addEventListener("end", function (event) {
    source.close();
    var status = event.data || "";
    var badge = document.getElementById("deployment-status");
    if (badge) { badge.textContent = status; badge.className = "badge badge-" + status; }
    if (state) state.textContent = "The build has ended: " + status + ".";
    log.dataset.finished = "true";
    if (window.htmx) {
      window.htmx.ajax("GET", window.location.pathname, { target: "#deployment-summary", select: "#deployment-summary", swap: "outerHTML" });
    }
  });

  // The session ended or the member left the workspace: reconnecting would only be refused.
  source.addEventListener("revoked", function () {
    source.close();
    if (state) state.textContent = "The live log stopped: you were signed out or left the workspace. Reload the page.";
  });

  source.addEventListener("error", function () {
    if (state && source.readyState === EventSource.CONNECTING) state.textContent = "Reconnecting…";
  });
  source.addEventListener("open", function () {
    if (state) state.textContent = "Following the build…";
  });
})();
