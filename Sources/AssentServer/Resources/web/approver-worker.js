// The service worker of a browser that gets sign-in requests (subscribed on /account). A push message from the
// server is decrypted by the browser; its "notification" member is shown (a sign-in request with the path of its
// approval page, or the outcome that replaces it: both carry the sign-in's tag). A click opens the page on this
// worker's origin (where the person subscribed, and where their passkey works).
"use strict";
self.addEventListener("push", function (event) {
    var message = {};
    try { message = event.data ? event.data.json() : {}; } catch (error) { message = {}; }
    var notification = message.notification || {};
    var path = notification.url;
    var url = typeof path === "string" && path.charAt(0) === "/" && path.charAt(1) !== "/"
        ? new URL(path, self.location.origin).href : null;
    event.waitUntil(self.registration.showNotification(notification.title || "Sign-in request", {
        body: notification.body || "",
        tag: notification.tag || undefined,
        data: { url: url },
        requireInteraction: url !== null
    }));
});

self.addEventListener("notificationclick", function (event) {
    event.notification.close();
    var url = event.notification.data && event.notification.data.url;
    if (url) { event.waitUntil(self.clients.openWindow(url)); }
});
