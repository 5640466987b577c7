// The wait for a push approval: the server's event stream says when the phone answered, and the page then posts
// its Continue form, which shows the outcome. Without scripts the Continue button does the same.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
    var form = document.getElementById("continue");
    var status = document.getElementById("status");
    if (!form || !window.EventSource) { return; }
    var events = new EventSource("/login/push/events");
    events.addEventListener("done", function () {
        events.close();
        status.textContent = "Your phone answered: continuing…";
        form.submit();
    });
});
