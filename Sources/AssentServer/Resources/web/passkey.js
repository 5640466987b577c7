// Passkeys on the sign-in pages (WebAuthn). Two uses:
// - a form#passkey-ceremony carries the server's options (data-options, JSON with Base64URL binary members, or
//   data-options-url to fetch them from) and whether to create a credential or use one (data-mode); its button
//   checks the form's other fields, runs the ceremony and posts the result;
// - the sign-in form's companion form#passkey-sign-in asks the server for options, offers the browser's passkeys in
//   the user-name field (conditional mediation, autocomplete="username webauthn") and behind its button, and posts
//   the chosen one.
// Without scripts or WebAuthn the passkey controls stay hidden and the other methods work as before.
"use strict";
(function () {
    function bytes(text) {
        var base64 = text.replace(/-/g, "+").replace(/_/g, "/");
        while (base64.length % 4) { base64 += "="; }
        var binary = atob(base64);
        var out = new Uint8Array(binary.length);
        for (var i = 0; i < binary.length; i++) { out[i] = binary.charCodeAt(i); }
        return out.buffer;
    }

    function text(buffer) {
        var view = new Uint8Array(buffer);
        var binary = "";
        for (var i = 0; i < view.length; i++) { binary += String.fromCharCode(view[i]); }
        return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    }

    function descriptors(list) {
        return (list || []).map(function (item) {
            var copy = { type: item.type, id: bytes(item.id) };
            if (item.transports) { copy.transports = item.transports; }
            return copy;
        });
    }

    function creationOptions(json) {
        var options = Object.assign({}, json);
        options.challenge = bytes(json.challenge);
        options.user = Object.assign({}, json.user, { id: bytes(json.user.id) });
        options.excludeCredentials = descriptors(json.excludeCredentials);
        return options;
    }

    function requestOptions(json) {
        var options = Object.assign({}, json);
        options.challenge = bytes(json.challenge);
        if (json.allowCredentials) { options.allowCredentials = descriptors(json.allowCredentials); }
        return options;
    }

    function credentialJSON(credential) {
        var response = credential.response;
        var json = {
            id: credential.id, rawId: text(credential.rawId), type: credential.type,
            authenticatorAttachment: credential.authenticatorAttachment || undefined,
            response: { clientDataJSON: text(response.clientDataJSON) }
        };
        if (response.attestationObject) {
            json.response.attestationObject = text(response.attestationObject);
            if (response.getTransports) { json.response.transports = response.getTransports(); }
        } else {
            json.response.authenticatorData = text(response.authenticatorData);
            json.response.signature = text(response.signature);
            if (response.userHandle) { json.response.userHandle = text(response.userHandle); }
        }
        return JSON.stringify(json);
    }

    function say(message) {
        var status = document.getElementById("passkey-status");
        if (status) { status.textContent = message; }
    }

    // The page's own wording of a sentence (data-* on #passkey-status, in the page's language), else English.
    function wording(name, english) {
        var status = document.getElementById("passkey-status");
        return (status && status.dataset[name]) || english;
    }

    function failed(error) {
        if (error && error.name === "AbortError") { return; }
        say(error && error.name === "NotAllowedError"
            ? wording("cancelled", "The passkey request was cancelled or timed out: try again, or use another method.")
            : wording("failed", "Your browser could not use a passkey here.") + " (" +
                (error && error.message || error) + ")");
    }

    // The options in data-options, or (data-options-url) fetched with the form's fields when the button is pressed.
    function options(form) {
        if (!form.dataset.optionsUrl) { return Promise.resolve(JSON.parse(form.dataset.options).publicKey); }
        var body = new URLSearchParams(new FormData(form));
        return fetch(form.dataset.optionsUrl, { method: "POST", body: body, credentials: "same-origin" })
            .then(function (answer) {
                return answer.json().then(function (json) {
                    if (!answer.ok) { throw new Error(json.message || answer.statusText); }
                    return json.publicKey;
                });
            });
    }

    function ceremony(form) {
        var button = document.getElementById("passkey-start");
        var create = form.dataset.mode === "create";
        button.hidden = false;
        button.addEventListener("click", function () {
            if (!form.reportValidity()) { return; }
            say(wording("prompt", "Follow your browser's prompt…"));
            options(form).then(function (publicKey) {
                return create
                    ? navigator.credentials.create({ publicKey: creationOptions(publicKey) })
                    : navigator.credentials.get({ publicKey: requestOptions(publicKey) });
            }).then(function (credential) {
                form.elements.credential.value = credentialJSON(credential);
                form.submit();
            }, failed);
        });
    }

    function signIn(form) {
        var pending = null;
        function ask(conditional) {
            if (pending) { pending.abort(); }
            var controller = new AbortController();
            pending = controller;
            var body = new URLSearchParams();
            body.set("csrf", form.elements.csrf.value);
            body.set("application", form.elements.application.value);
            return fetch("/login/passkey/options", { method: "POST", body: body, credentials: "same-origin" })
                .then(function (answer) {
                    return answer.json().then(function (json) {
                        if (!answer.ok) { throw new Error(json.message || answer.statusText); }
                        var request = { publicKey: requestOptions(json.publicKey), signal: controller.signal };
                        if (conditional) { request.mediation = "conditional"; }
                        return navigator.credentials.get(request);
                    });
                })
                .then(function (credential) {
                    form.elements.credential.value = credentialJSON(credential);
                    form.submit();
                });
        }
        form.hidden = false;
        document.getElementById("passkey-button").addEventListener("click", function () {
            say(wording("prompt", "Follow your browser's prompt…"));
            ask(false).catch(failed);
        });
        // The browser's suggestion in the user-name field, unless the page shows why the last try failed (the
        // person then chooses again with the button).
        if (PublicKeyCredential.isConditionalMediationAvailable && !document.querySelector(".message")) {
            PublicKeyCredential.isConditionalMediationAvailable().then(function (available) {
                if (available) { ask(true).catch(function () {}); }
            });
        }
    }

    document.addEventListener("DOMContentLoaded", function () {
        if (!window.PublicKeyCredential || !navigator.credentials) { return; }
        var form = document.getElementById("passkey-ceremony");
        if (form) { ceremony(form); }
        var companion = document.getElementById("passkey-sign-in");
        if (companion) { signIn(companion); }
    });
})();
