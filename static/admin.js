// wikimem admin — the only script of the UI (the CSP allows 'self' scripts only).
// The server renders every instant as <time class="instant" datetime="…Z"
// title="… UTC">… UTC</time>, so pages read correctly without JavaScript.
// Here the text becomes the browser's local time; the title keeps UTC (hover).
// Diary wall-clock times (HH:MM, the person's own clock) have no "instant"
// class and are never touched.
(function () {
  "use strict";

  function pad(n) { return (n < 10 ? "0" : "") + n; }

  // "2026-07-20 20:30 GMT+8": ISO-like order whatever the browser's locale.
  function localText(date) {
    var zone = "";
    try {
      var parts = new Intl.DateTimeFormat("en-US", { timeZoneName: "short" }).formatToParts(date);
      for (var i = 0; i < parts.length; i++) {
        if (parts[i].type === "timeZoneName") { zone = " " + parts[i].value; }
      }
    } catch (e) { /* no Intl: the date and time alone */ }
    return date.getFullYear() + "-" + pad(date.getMonth() + 1) + "-" + pad(date.getDate()) +
      " " + pad(date.getHours()) + ":" + pad(date.getMinutes()) + zone;
  }

  function localise(root) {
    var times = root.querySelectorAll("time.instant[datetime]");
    for (var i = 0; i < times.length; i++) {
      var el = times[i];
      var date = new Date(el.getAttribute("datetime"));
      if (isNaN(date.getTime())) { continue; }
      el.textContent = localText(date);
      el.classList.add("local");
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { localise(document); });
  } else {
    localise(document);
  }
}());
