// Ages ("5 minutes ago") on the pages that load this. The server writes the moment itself,
// <time datetime="…" data-ago>2026-12-07 17:20 UTC</time>, which stays true (so a table can be kept while its rows
// do not change); this shows its age in the reader's clock, again every 30 s and in whatever htmx swaps in, and
// keeps the UTC moment as the title.
(function () {
  "use strict";
  var UNITS = [["year", 31536000], ["month", 2592000], ["week", 604800], ["day", 86400], ["hour", 3600],
               ["minute", 60]];

  function age(seconds) {
    for (var i = 0; i < UNITS.length; i++) {
      var count = Math.floor(seconds / UNITS[i][1]);
      if (count >= 1) return count + " " + UNITS[i][0] + (count === 1 ? "" : "s") + " ago";
    }
    return "just now";
  }

  function render(root) {
    var times = (root || document).querySelectorAll("time[data-ago]");
    var now = Date.now();
    for (var i = 0; i < times.length; i++) {
      var moment = Date.parse(times[i].getAttribute("datetime"));
      if (isNaN(moment)) continue;
      if (!times[i].title) times[i].title = times[i].textContent;
      times[i].textContent = age(Math.max(0, (now - moment) / 1000));
    }
  }

  document.addEventListener("DOMContentLoaded", function () { render(); });
  document.addEventListener("htmx:load", function (event) { render(event.target); });
  setInterval(render, 30000);
})();
