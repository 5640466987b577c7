"""Teaches schemathesis the input formats the Assent OpenAPI document names but JSON Schema cannot state.

`operation-data`: the pattern in the document states the grammar of operation data; what a pattern cannot state is
that an IBAN's check digits are right and that a date is a real one. This strategy draws only valid operation data
(every field type, escapes, empty positions), so a rejected one is a real disagreement between document and server.

`accent-color` and `image-base64`: a colour white text is readable on, and a PNG or JPEG (both checked by the server).
`apns-p8` and `google-service-account`: an application's APNs signing key (a P-256 PKCS#8 PEM) and Firebase service
account (Google's JSON with an RSA key); the server parses both, so the strategies draw real ones (throwaway keys made
with `openssl genpkey` for these tests only; they sign nothing anywhere).

Four body rules the document states in words only, applied to generated bodies without touching what the schema
checks (a field is replaced only when it already has the documented shape, so negative cases stay negative):
- `POST /api/v1/operations`: with a map of forms, `defaultLanguage` names one of its keys.
- `PUT /api/v1/tfa/policy`: the passkey origins are on the relying-party ID.
- `POST /api/v1/clients`: the fields that belong together (`consistent_client`).
- `POST /api/v1/clients`: a JWK's coordinates are a point on P-256 and an RSA modulus is a real 2048-bit key; the
  generated ones are replaced by these public keys (made with `openssl ecparam -name prime256v1 -genkey` and
  `openssl genrsa 2048`).
"""

import datetime
import json
import re

import schemathesis
from hypothesis import strategies as st

UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
DIGITS = "0123456789"


def iban(country: str, bban: str) -> str:
    """The IBAN with correct check digits (ISO 13616 mod 97) for a country code and an account part."""
    rearranged = bban + country + "00"
    number = int("".join(str(int(c, 36)) for c in rearranged))
    return f"{country}{98 - number % 97:02d}{bban}"


amounts = st.builds(
    lambda number, currency: f"A{number}{currency}",
    st.from_regex(r"\A([0-9]{1,12}(\.[0-9]{1,4})?|\.[0-9]{1,4})\Z"),
    st.text(UPPER, min_size=3, max_size=3),
)
accounts = st.builds(
    lambda country, bban, bic: "I" + iban(country, bban) + (f",{bic}" if bic else ""),
    st.text(UPPER, min_size=2, max_size=2),
    st.text(UPPER + DIGITS, min_size=1, max_size=30),
    st.one_of(st.none(), st.from_regex(r"\A[A-Z]{6}[A-Z0-9]{2}([A-Z0-9]{3})?\Z")),
)
dates = st.dates(min_value=datetime.date(1, 1, 1)).map(lambda d: f"D{d.year:04d}{d.month:02d}{d.day:02d}")
# Text: any character but control characters, `*` and `\`, which appear escaped.
text_characters = st.one_of(
    st.characters(min_codepoint=32, blacklist_characters="*\\", blacklist_categories=("Cs",)),
    st.sampled_from(["\\n", "\\*", "\\\\"]),
)
texts = st.builds(
    lambda letter, parts: letter + "".join(parts),
    st.sampled_from([c for c in UPPER + UPPER.lower() if c not in "AID"]),
    st.lists(text_characters, max_size=40),
)
fields = st.one_of(st.just(""), amounts, accounts, dates, texts)
operation_data = st.builds(
    lambda version, template, body: f"{version}{template}" + "".join("*" + f for f in body),
    st.sampled_from(UPPER),
    st.integers(min_value=0, max_value=99),
    st.lists(fields, max_size=6),
)

schemathesis.openapi.format("operation-data", operation_data)

APNS_KEY = """-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgQ88Qffbu2u8lEi4s
t5A/5alXOSYz83e9Mwa6d6QnxwahRANCAAQX/kQPmewrKGN5wCjzJGMl4qKDwTPP
PxvX69/yZ+MM7FLqj4uZ07084J5eOFTvjWJ3Nt4RYaZRMgqLSmLLAx/d
-----END PRIVATE KEY-----"""
SERVICE_ACCOUNT_KEY = """-----BEGIN PRIVATE KEY-----
MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC6MVhXka3W2MB+
/ayP11eHyVW9dUhl39o+tVDOR9xpuQnDxAUoJdU0OCPf8j7fbkBpZ53IfjV8hcyq
vbW7BLtOaqqR7QwqaX/OZt9xB5OxzYMb8H9ATKQdzUtnbI0q7ySlV6KVuPIYw1bZ
kK6l7DixYokSmDZujiL+PQrsE07S7jOwv216Koq5ifysj0jkggnFbFEF40XbHgcS
M2JL3aGmGAbqlD4R0WbL90q0XHBjgz/qnDeSIoqZB984wOz7+6tPFYUVU0XX9LSa
cYaw2NSMMnQa8DdmMOu1pslvMnpfg0Sh0HxOXKUozj2OpuT9I8UIJzWRfbI3YKlU
7WXIg1KXAgMBAAECggEABDjXIyvADDZUCsGCYNsr2Warcpm6gP/KYiF1gVlq5dEC
bcQXI6nUUkiKhYgh5WRmtsjNKt0oVGye1TUNs/2sqI5H61cBXhJKibhzpHQ5/CWI
Cr6aK150ceJf80H541Oei790heb8WghO1FBT2GvjfZRrDxzK2hiP7DXxPEeOWWJB
Aa6S88enBc2M+qqK/VFJMowuEu1VUmvDFZbY5n+9xCSkAVx/2gh0hWOSw8jJmL5Q
tuTLIKtNJDE5srFdfiQMhreqLaj3dfwIh/QIpUFZNNpXO+FshH+RsSJOWYQDm0vE
UJ2toRhdMJL45r82enaXdz7Y4TeckHERqQRjjJGOMQKBgQD+iq6leNqAN/9Cr+f7
nUgr6y4QL6lZiooQeXulvzzmKvVsy3p5tEqgP9PQF3hpMA7X8cLwT653AmMoQ5wr
1tGc58TtvXTsnQwZOGM0U/l7MjtE0nfD8FCdw+fj8a4mv0grqdI+33KHxvGTWqPI
nEltrKOxqOvwYE+PmL6HFiMraQKBgQC7QmugnviUoVvkf7AVgR83yZAAwHds6bzP
+u+HQpWxbmlYfRHib3unvS+u52LLubXlsFUB2fjMp+qQKlC2ZK7x4RqYtl6aDok1
i8WV9zzbGB0JWMzyyumm+kfrbMqm5rtsR1BmJGtXjjctnFZmngagFLjRNm0mSswl
YyE55PjN/wKBgCn9QKAlVo4OLrqWgAM+x9gO3LNo2VvfAbWEBMSrzmT9syy2SEbp
WeIjhVJvfLqFZf1zcT/pNROGvkq3FH0a28sxZIf/V9lscsF6TsskCySqfaJ1wbH9
456S4Z71kE/t//7L7dXXUHJbfCBdtGT0exxvfTVic0Fc8eLzRILOQRD5AoGAB3I2
sWZg4BgifU2OhOxjf2ZmcYE1voD03xhNWgWNykZnrfsbMPPZ6Oue78eHqC40S3Pd
jXtLZ2ft7dmg5//M7RVUZ2opDNszHYv3SWVRaCznSq3bSHRFIjyli3kB/e0C2uVj
Dwy3r/2ZuBiVXvM9tDPevYL6iCFFSN9OPO0b76UCgYEA0DHoZmgnE+d9tk+X/QUF
wEuvLxSvWmLFnWc3XWhALKs3EYQT/AuyFHu/lqgWMvKS0VseImwRN4nq9N8xZqlC
6Ti+03PH+8iBaVooHqX1Ucn0MKrJRY5ZV+cFcSPtj7vhWqQ+S36bC7/cdncRk02f
Ly6/h8Uss69yWDNW7oCM3vE=
-----END PRIVATE KEY-----"""
schemathesis.openapi.format("apns-p8", st.just(APNS_KEY))
# Colours white text is readable on (WCAG 4.5:1), and a 1×1 PNG; each also empty (back to the default).
schemathesis.openapi.format("accent-color", st.sampled_from(["", "#0a6e4f", "#1F4E79", "#000000", "#6b2c91"]))
schemathesis.openapi.format("image-base64", st.sampled_from(["", "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGPgyvMHAAFNAMhNpTR5AAAAAElFTkSuQmCC"]))
schemathesis.openapi.format(
    "google-service-account",
    st.builds(
        lambda project: json.dumps(
            {
                "type": "service_account", "project_id": project, "private_key_id": "k1",
                "private_key": SERVICE_ACCOUNT_KEY + "\n", "client_email": f"push@{project}.iam.gserviceaccount.com",
            }
        ),
        st.from_regex(r"\A[a-z][a-z0-9-]{4,28}[a-z0-9]\Z"),
    ),
)


LANGUAGE_TAG = re.compile(r"[A-Za-z0-9-]{1,35}")
RP_ID = re.compile(r"[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*")
WEB_ORIGIN = re.compile(r"https?://[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*(:[1-9][0-9]{0,4})?")
COORDINATE = re.compile(r"[A-Za-z0-9_-]{43}")
MODULUS = re.compile(r"[A-Za-z0-9_-]{342,}")
EXPONENT = re.compile(r"[A-Za-z0-9_-]{1,8}")
P256_POINTS = [
    ("qd-_FSsllpEdztmpOGL7hPq8VFyikc0bPSsMxkHgFmw", "I0Cc-JYTdDmv4e99J4eaWRuHjL4rL8YRHPOX6hdlGBc"),
    ("gxQaYr61c21j47rUQYjFpUsKPdpozalPeHJqYFpPsq0", "OJSYCxpzeuX9BZ4MrtVWFRCtU3Uc9OFM--0bUYDYf50"),
    ("aRB9Y3c2fBcTRdMqHfkxk5zpK4YbqGuJmoD9ye4RM2Q", "6fKbFsrvLtc9vHAatL19BEjdrVudoYxtU7W_Nn9SWJg"),
]
RSA_MODULUS = (
    "xLyTYZB7y6QOyXZZN-sRMKGKPoU8p-qX4Rt9uYnYNIPXlHe9NdYjl6mNEogoHJfPFsW_eH_e_YGs2NQfIAMMIBul_6k_WfAimmdJPx8TIctkhTP0"
    "itgQFhLYGyNYf19d3SA8B-GrABrfLI1bg0pKdEDLRotexmVmQh-JEL80U_MWbL7h_UzFQEpKPr5PaDQK2sH1S-ODO6UvBTHH60808SIjdon2LlKL"
    "Qy-ze7MIqd2FJCqOiWjT7hKxi9zODmaizQJ80McIOB2_Kzzo82xFsNG2kB8lgLUKpOaoOXt8Y06iPjhO-HHYHWHbEzgIoLbBQIc5XJLZDkiU3dMm"
    "ZKqMNw"
)


def is_call(context, method: str, path: str) -> bool:
    operation = context.operation
    return operation is not None and operation.method.upper() == method and operation.path == path


def matches(pattern: re.Pattern, value) -> bool:
    return isinstance(value, str) and pattern.fullmatch(value) is not None


@schemathesis.hook
def map_case(context, case):
    """Applied to the cases of every phase (body hooks miss the coverage phase). The body is assigned only when it
    changed: an assignment makes schemathesis validate the case again, and it then takes a case without its optional
    body for a negative one."""
    meta = getattr(case, "meta", None)
    mode = getattr(getattr(meta, "generation", None), "mode", None)
    # Negative cases stay as they were drawn: a rule applied to them could make them valid.
    if mode is not None and str(getattr(mode, "value", mode)).lower() != "positive":
        return case
    body = with_documented_rules(context, case.body)
    if body is not case.body:
        case.body = body
    return case


GRANTS = {"authorization_code", "refresh_token", "ciba"}
REDIRECT = "https://rp.example/cb"


def consistent_client(body):
    """A client's fields as the document's descriptions tie them together: the grant types decide whether redirect and
    logout URIs belong (authorization_code) and refresh_token comes with authorization_code; the delivery mode
    whether a notification endpoint does (ping and push); a public client authenticates with none and uses no ciba;
    jwks belong to private_key_jwt. Only a body whose fields already have their documented types is changed."""
    grants, redirects = body.get("grantTypes"), body.get("redirectUris")
    if not (
        grants is None
        or (isinstance(grants, list) and grants and all(isinstance(g, str) for g in grants) and set(grants) <= GRANTS)
    ):
        return body
    if not (redirects is None or isinstance(redirects, list)):
        return body
    mode = body.get("deliveryMode")
    if mode not in (None, "poll", "ping", "push") or body.get("type") not in (None, "public", "confidential"):
        return body
    body = dict(body)
    public = body.get("type") == "public"
    granted = set(grants) if grants is not None else ({"authorization_code"} if redirects else {"ciba"})
    if public:
        granted.discard("ciba")
        granted = granted or {"authorization_code"}
        if isinstance(body.get("tokenEndpointAuthMethod"), str):
            body["tokenEndpointAuthMethod"] = "none"
        body.pop("jwks", None)
    if "authorization_code" not in granted:
        granted.discard("refresh_token")
        granted = granted or {"ciba"}
        for field in ("redirectUris", "postLogoutRedirectUris", "backchannelLogoutUri"):
            body.pop(field, None)
    elif not redirects:
        body["redirectUris"] = [REDIRECT]
    if grants is not None or public:
        body["grantTypes"] = sorted(granted)
    if (mode or "poll") == "poll":
        body.pop("notificationEndpoint", None)
    elif not isinstance(body.get("notificationEndpoint"), str):
        body["notificationEndpoint"] = "https://rp.example/ciba"
    if body.get("tokenEndpointAuthMethod") != "private_key_jwt":
        body.pop("jwks", None)
    elif not isinstance(body.get("jwks"), dict):
        x, y = P256_POINTS[0]
        body["jwks"] = {"keys": [{"kty": "EC", "crv": "P-256", "x": x, "y": y}]}
    return body


def with_documented_rules(context, body):
    if not isinstance(body, dict):
        return body
    if is_call(context, "POST", "/api/v1/operations"):
        forms, language = body.get("formData"), body.get("defaultLanguage")
        keys = [key for key in forms if matches(LANGUAGE_TAG, key)] if isinstance(forms, dict) else []
        is_map = keys and all(isinstance(value, dict) for value in forms.values()) and not isinstance(
            forms.get("title"), str
        )
        if is_map and matches(LANGUAGE_TAG, language) and language.lower() not in {k.lower() for k in keys}:
            body = {**body, "defaultLanguage": keys[0]}
    if is_call(context, "PUT", "/api/v1/tfa/policy"):
        passkeys = body.get("passkeys")
        if isinstance(passkeys, dict) and matches(RP_ID, passkeys.get("relyingPartyId")) and isinstance(
            passkeys.get("origins"), list
        ):
            host = passkeys["relyingPartyId"]
            origins = [
                ("https://" + host) if matches(WEB_ORIGIN, origin) else origin for origin in passkeys["origins"]
            ]
            body = {**body, "passkeys": {**passkeys, "origins": origins}}
    if is_call(context, "POST", "/api/v1/clients"):
        body = consistent_client(body)
        jwks = body.get("jwks")
        if isinstance(jwks, dict) and isinstance(jwks.get("keys"), list):
            keys = []
            for index, key in enumerate(jwks["keys"]):
                if isinstance(key, dict) and key.get("kty") == "EC":
                    x, y = P256_POINTS[index % len(P256_POINTS)]
                    key = {**key, **({"x": x} if matches(COORDINATE, key.get("x")) else {})}
                    key = {**key, **({"y": y} if matches(COORDINATE, key.get("y")) else {})}
                elif isinstance(key, dict) and key.get("kty") == "RSA":
                    key = {**key, **({"n": RSA_MODULUS} if matches(MODULUS, key.get("n")) else {})}
                    key = {**key, **({"e": "AQAB"} if matches(EXPONENT, key.get("e")) else {})}
                keys.append(key)
            body = {**body, "jwks": {**jwks, "keys": keys}}
    return body
