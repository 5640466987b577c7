#!/usr/bin/python3
"""A website signing a person in with Assent through authlib (Debian's python3-authlib), an OpenID Connect client we
did not write: discovery, the authorization URL with PKCE (S256), state and nonce, the hosted sign-in page (a
password, as a browser would post it), the token request, and the ID token checked by authlib against the JWKS
(signature, iss, aud, exp, nonce, at_hash). Prints the ID token's claims as JSON; exits 1 with the reason otherwise.

Usage: authlib-rp.py ISSUER CLIENT_ID CLIENT_SECRET REDIRECT_URI USER PASSWORD
"""
import http.client
import json
import os
import re
import sys
import urllib.parse

import requests
from authlib.common.security import generate_token
from authlib.integrations.requests_client import OAuth2Session
from authlib.jose import JsonWebKey, jwt
from authlib.oidc.core import CodeIDToken


def fetch(base, method, path, cookie=None, form=None):
    """One request without following redirects; the cookie header is handled here because the server's cookies are
    Secure and this is plain HTTP on loopback (browsers allow that; Python's cookie jar does not)."""
    url = urllib.parse.urlsplit(base)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    headers = {"Cookie": cookie} if cookie else {}
    body = None
    if form is not None:
        body = urllib.parse.urlencode(form)
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    connection.request(method, path, body=body, headers=headers)
    response = connection.getresponse()
    return response.status, response.getheaders(), response.read().decode()


def main():
    # The server under test listens on plain HTTP on loopback; authlib refuses that unless told.
    os.environ["AUTHLIB_INSECURE_TRANSPORT"] = "1"
    issuer, client_id, secret, redirect_uri, user, password = sys.argv[1:7]
    discovery = requests.get(issuer + "/.well-known/openid-configuration", timeout=30).json()
    session = OAuth2Session(
        client_id, secret, scope="openid profile", redirect_uri=redirect_uri, code_challenge_method="S256",
        token_endpoint_auth_method="client_secret_basic")
    verifier = generate_token(48)
    nonce = generate_token(20)
    url, state = session.create_authorization_url(
        discovery["authorization_endpoint"], code_verifier=verifier, nonce=nonce)

    # The browser's part: the authorization endpoint, the sign-in page, the password.
    target = urllib.parse.urlsplit(url)
    status, headers, _ = fetch(issuer, "GET", target.path + "?" + target.query)
    assert status == 303, f"authorization endpoint answered {status}"
    cookie = next(v.split(";")[0] for k, v in headers if k.lower() == "set-cookie" and "assent-login" in v)
    location = next(v for k, v in headers if k.lower() == "location")
    status, _, page = fetch(issuer, "GET", location, cookie=cookie)
    assert status == 200, f"sign-in page answered {status}"
    fields = dict(re.findall(r'name="(csrf|application)" value="([^"]*)"', page))
    status, headers, _ = fetch(
        issuer, "POST", "/login", cookie=cookie,
        form={"csrf": fields["csrf"], "application": fields["application"], "userId": user, "password": password})
    callback = next(v for k, v in headers if k.lower() == "location")
    assert callback.startswith(redirect_uri), f"signed in, but sent to {callback}"

    # The website's part: authlib checks state, redeems the code with the verifier, and verifies the ID token.
    token = session.fetch_token(
        discovery["token_endpoint"], authorization_response=callback, code_verifier=verifier, state=state)
    keys = JsonWebKey.import_key_set(requests.get(discovery["jwks_uri"], timeout=30).json())
    claims = jwt.decode(
        token["id_token"], keys, claims_cls=CodeIDToken,
        claims_options={"iss": {"essential": True, "values": [discovery["issuer"]]}},
        claims_params={"nonce": nonce, "client_id": client_id, "access_token": token["access_token"]})
    claims.validate()
    print(json.dumps(dict(claims), sort_keys=True))


if __name__ == "__main__":
    try:
        main()
    except Exception as error:  # noqa: BLE001 — the reason is the output
        print(f"{type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(1)
