// Sign-in requests in this browser (/account): the button asks for permission to notify, registers the service
// worker, subscribes with the server's VAPID key (data-key-url) and posts the subscription's endpoint and keys in the
// form. Without scripts, service workers or the Push API the button stays hidden.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
    var form = document.getElementById("browser-push");
    var status = document.getElementById("browser-push-status");
    if (!form || !("serviceWorker" in navigator) || !window.PushManager || !window.Notification) { return; }
    var button = document.getElementById("browser-push-start");
    button.hidden = false;

    function bytes(text) {
        var base64 = text.replace(/-/g, "+").replace(/_/g, "/");
        while (base64.length % 4) { base64 += "="; }
        var binary = atob(base64);
        var out = new Uint8Array(binary.length);
        for (var i = 0; i < binary.length; i++) { out[i] = binary.charCodeAt(i); }
        return out;
    }

    // The registration once its worker is active (its scope is the worker's folder, not this page, so
    // navigator.serviceWorker.ready would wait for ever).
    function active(registration) {
        if (registration.active) { return registration; }
        var worker = registration.installing || registration.waiting;
        return new Promise(function (resolve) {
            worker.addEventListener("statechange", function () {
                if (worker.state === "activated") { resolve(registration); }
            });
        });
    }

    button.addEventListener("click", function () {
        status.textContent = status.dataset.allow || "Allow notifications when your browser asks…";
        Notification.requestPermission().then(function (permission) {
            if (permission !== "granted") { throw new Error("notifications are not allowed for this site"); }
            return navigator.serviceWorker.register(form.dataset.worker);
        }).then(active).then(function (registration) {
            return fetch(form.dataset.keyUrl, { credentials: "same-origin" }).then(function (answer) {
                return answer.json().then(function (json) {
                    if (!answer.ok) { throw new Error(json.message || answer.statusText); }
                    return registration.pushManager.subscribe({
                        userVisibleOnly: true,
                        applicationServerKey: bytes(json.responseObject.applicationServerKey)
                    });
                });
            });
        }).then(function (subscription) {
            var json = subscription.toJSON();
            form.elements.endpoint.value = json.endpoint;
            form.elements.p256dh.value = json.keys.p256dh;
            form.elements.auth.value = json.keys.auth;
            form.submit();
        }).catch(function (error) {
            status.textContent = (status.dataset.failed || "This browser could not subscribe.") + " (" +
                (error && error.message || error) + ")";
        });
    });
});
