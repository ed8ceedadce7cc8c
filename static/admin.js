// wikimem admin — the only script of the UI (the CSP allows 'self' scripts only).
//
// Times. The server renders every instant as <time class="instant"
// datetime="…Z" title="… UTC">…</time> in the operator's zone (the <html>
// element's data-tz), so pages read correctly without JavaScript. An
// operator who follows the browser's zone (data-tz-choice="browser") needs
// the server to know that zone: it is left in the wikimem_browser_tz cookie,
// and a page rendered before the server knew it is loaded once more (a GET)
// or has its instants shown in the browser's zone in place (anything else).
// Diary wall-clock times (HH:MM, the person's own clock) have no "instant"
// class and are never touched.
//
// Bulk rollback: the confirm button says what the force box would do.
// History: a card's changes open in place (<details>), fetched on first open.
// History on a phone: the filters fold into one line (open when a filter is set).
(function () {
  "use strict";

  var BROWSER_COOKIE = "wikimem_browser_tz";
  var YEAR = 400 * 24 * 3600;

  function pad(n) { return (n < 10 ? "0" : "") + n; }

  function cookie(name) {
    var parts = document.cookie ? document.cookie.split("; ") : [];
    for (var i = 0; i < parts.length; i++) {
      var eq = parts[i].indexOf("=");
      if (parts[i].slice(0, eq) === name) { return parts[i].slice(eq + 1); }
    }
    return null;
  }

  function browserZone() {
    try { return Intl.DateTimeFormat().resolvedOptions().timeZone || null; } catch (e) { return null; }
  }

  // "2026-07-20 20:30 GMT+8" in the given zone: ISO-like order whatever the browser's locale.
  function zoneText(date, zone) {
    var f = new Intl.DateTimeFormat("en-US", {
      timeZone: zone, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit",
      hour: "2-digit", minute: "2-digit", timeZoneName: "short"
    });
    var p = {};
    f.formatToParts(date).forEach(function (part) { p[part.type] = part.value; });
    return p.year + "-" + p.month + "-" + p.day + " " + pad(Number(p.hour) % 24) + ":" + p.minute +
      (p.timeZoneName ? " " + p.timeZoneName : "");
  }

  function localise(root, zone) {
    var times = root.querySelectorAll("time.instant[datetime]");
    for (var i = 0; i < times.length; i++) {
      var date = new Date(times[i].getAttribute("datetime"));
      if (isNaN(date.getTime())) { continue; }
      try { times[i].textContent = zoneText(date, zone); } catch (e) { return; }
      times[i].classList.add("local");
    }
    var names = root.querySelectorAll(".zone-name");
    for (var j = 0; j < names.length; j++) { names[j].textContent = zone; }
  }

  function followBrowser() {
    var html = document.documentElement;
    var zone = browserZone();
    if (!zone || !/^[A-Za-z0-9_+\-\/]{1,64}$/.test(zone)) { return; }  // an IANA name: no quoting needed
    if (cookie(BROWSER_COOKIE) !== zone) {
      document.cookie = BROWSER_COOKIE + "=" + zone + "; path=/; max-age=" + YEAR +
        "; samesite=lax" + (location.protocol === "https:" ? "; secure" : "");
    }
    if (html.getAttribute("data-tz-choice") !== "browser" || html.getAttribute("data-tz") === zone) { return; }
    var key = "wikimem-tz-reloaded:" + zone;
    var reload = false;
    try {
      reload = html.getAttribute("data-reloadable") === "1" && cookie(BROWSER_COOKIE) === zone &&
        !sessionStorage.getItem(key);
      if (reload) { sessionStorage.setItem(key, "1"); }
    } catch (e) { reload = false; }
    if (reload) {
      location.reload();
    } else {
      localise(document, zone);
    }
  }

  function bulkForce() {
    var force = document.getElementById("force");
    var button = document.getElementById("confirm");
    if (!force || !button || !button.hasAttribute("data-label-forced")) { return; }
    function update() {
      button.textContent = button.getAttribute(force.checked ? "data-label-forced" : "data-label");
    }
    force.addEventListener("change", update);
    update();
  }

  function changesInPlace() {
    var boxes = document.querySelectorAll("details.card-changes[data-src]");
    for (var i = 0; i < boxes.length; i++) {
      boxes[i].addEventListener("toggle", load);
    }
  }

  function load(event) {
    var box = event.currentTarget;
    if (!box.open || box.getAttribute("data-loaded")) { return; }
    box.setAttribute("data-loaded", "loading");
    var body = box.querySelector(".card-changes-body");
    fetch(box.getAttribute("data-src"), { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) {
        if (!r.ok) { throw new Error(r.status + " " + r.statusText); }
        return r.text();
      })
      .then(function (html) {
        // Our own page, rendered and escaped by the server; a parsed document runs no script.
        var doc = new DOMParser().parseFromString(html, "text/html");
        var found = doc.querySelector("#changes");
        if (!found) { throw new Error("no changes on the page"); }
        body.replaceChildren.apply(body, Array.prototype.slice.call(found.childNodes).map(function (n) {
          return document.importNode(n, true);
        }));
        var zone = document.documentElement.getAttribute("data-tz");
        if (zone && zone !== doc.documentElement.getAttribute("data-tz")) { localise(body, zone); }
        box.setAttribute("data-loaded", "1");
      })
      .catch(function (err) {
        box.removeAttribute("data-loaded");
        var note = document.createElement("p");
        note.className = "error small";
        note.textContent = "Could not load the changes (" + err.message + "): open the link above.";
        body.appendChild(note);
      });
  }

  // The server sends the filters open (so they work without JavaScript); a phone folds them
  // unless one is set, so the history itself is on the first screen.
  function foldFilters() {
    var fold = document.querySelector("details.filters-fold");
    if (fold && !fold.hasAttribute("data-active") && window.matchMedia("(max-width: 720px)").matches) {
      fold.open = false;
    }
  }

  function start() {
    followBrowser();
    bulkForce();
    changesInPlace();
    foldFilters();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
}());
