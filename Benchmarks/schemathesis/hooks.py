"""Teaches schemathesis the input formats the Assent OpenAPI document names but JSON Schema cannot state.

`operation-data`: the pattern in the document states the grammar of operation data; what a pattern cannot state is
that an IBAN's check digits are right and that a date is a real one. This strategy draws only valid operation data
(every field type, escapes, empty positions), so a rejected one is a real disagreement between document and server.

Two body rules the document states in words only, applied to generated bodies without touching what the schema
checks (a field is replaced only when it already has the documented shape, so negative cases stay negative):
- `POST /api/v1/operations`: with a map of forms, `defaultLanguage` names one of its keys.
- `POST /api/v1/clients`: a JWK's coordinates are a point on P-256 and an RSA modulus is a real 2048-bit key; the
  generated ones are replaced by these public keys (made with `openssl ecparam -name prime256v1 -genkey` and
  `openssl genrsa 2048`).
"""

import datetime
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


LANGUAGE_TAG = re.compile(r"[A-Za-z0-9-]{1,35}")
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
    body = with_documented_rules(context, case.body)
    if body is not case.body:
        case.body = body
    return case


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
    if is_call(context, "POST", "/api/v1/clients"):
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
