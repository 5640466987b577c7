// The console's live statuses: the page's event stream (the data-live URL on <main>) sends {"id", "status"} for
// every element marked data-status-of; the text and colour change in place. An element with data-reload loads
// the page again when its status changes (its actions depend on it); what data-pending-of an operation
// marks is hidden once the operation is no longer PENDING. The browser reconnects a dropped stream.
"use strict";
// Times come in UTC (kept in each element's title); they are shown in the browser's time zone, in the same shape
// as the times the server writes into sentences (2026-11-28 15:35:02 UTC): one format on every page.
document.addEventListener("DOMContentLoaded", function () {
    var format = new Intl.DateTimeFormat("en-US", {
        year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit",
        hourCycle: "h23", timeZoneName: "short"
    });
    Array.prototype.forEach.call(document.querySelectorAll("time[datetime]"), function (element) {
        var date = new Date(element.getAttribute("datetime"));
        if (isNaN(date.getTime())) { return; }
        var part = {};
        format.formatToParts(date).forEach(function (p) { part[p.type] = p.value; });
        element.textContent = part.year + "-" + part.month + "-" + part.day + " " + part.hour + ":" + part.minute +
            ":" + part.second + " " + part.timeZoneName;
    });
});
document.addEventListener("DOMContentLoaded", function () {
    var main = document.getElementById("live");
    if (!main || !main.dataset.live || !window.EventSource) { return; }
    var events = new EventSource(main.dataset.live);
    // While the stream is down (the server went away, the network dropped), the page says so; the browser
    // reconnects by itself, and the sign goes when it has.
    var lost = document.getElementById("connection-lost");
    events.addEventListener("error", function () { if (lost) { lost.hidden = false; } });
    events.addEventListener("open", function () { if (lost) { lost.hidden = true; } });
    // A submitted form leads to the next page: a change it caused must not reload this one meanwhile.
    document.addEventListener("submit", function () { events.close(); });
    events.addEventListener("status", function (event) {
        var change = JSON.parse(event.data);
        Array.prototype.forEach.call(document.querySelectorAll("[data-status-of]"), function (element) {
            if (element.dataset.statusOf !== change.id || element.textContent === change.status) { return; }
            element.textContent = change.status;
            element.className = "status status-" + change.status.toLowerCase();
            // A notice about the state before ("Operation created: it waits…") is no longer true.
            var notice = document.getElementById("notice");
            if (notice && notice.className === "notice") { notice.hidden = true; }
            if (element.hasAttribute("data-reload")) { window.location.reload(); }
        });
        // What only a pending operation offers (its QR codes, cancel) goes once it is finished.
        Array.prototype.forEach.call(document.querySelectorAll("[data-pending-of]"), function (element) {
            if (element.dataset.pendingOf === change.id) { element.hidden = change.status !== "PENDING"; }
        });
    });
});
