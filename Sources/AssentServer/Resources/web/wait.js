// The wait for a phone's answer: the server's event stream (the URL in the Continue element's data-events) says
// when the phone answered, and the page then goes on — it posts the Continue form or follows the Continue link,
// which shows the outcome. Without scripts the person clicks Continue. Images with data-refresh (a QR code that
// changes) are loaded again every that many seconds.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
    Array.prototype.forEach.call(document.querySelectorAll("img[data-refresh]"), function (image) {
        var source = image.src;
        setInterval(function () { image.src = source + "&r=" + Date.now(); }, 1000 * Number(image.dataset.refresh));
    });
    var next = document.getElementById("continue");
    var status = document.getElementById("status");
    if (!next || !next.dataset.events || !window.EventSource) { return; }
    var events = new EventSource(next.dataset.events);
    // A page waiting on a stream that is down says so (#connection-lost, in the page's language) until it is back.
    var lost = document.getElementById("connection-lost");
    events.addEventListener("error", function () { if (lost) { lost.hidden = false; } });
    events.addEventListener("open", function () { if (lost) { lost.hidden = true; } });
    events.addEventListener("done", function () {
        events.close();
        status.textContent = next.dataset.answered || "Your phone answered: continuing…";
        if (next.tagName === "FORM") { next.submit(); } else { window.location.assign(next.href); }
    });
});
