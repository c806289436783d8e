"""KmsClient and Trust over `httpx.MockTransport`: pinning, URLs, errors, sessions, paging.

Behaviour against a real KMA over TLS is for the integration tests.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kms_client import (
    ApiError,
    Conflict,
    InternalError,
    KmaUnreachable,
    KmsClient,
    NotFound,
    Trust,
    TrustError,
    Unauthenticated,
    fingerprint_of,
    iter_all,
    ssl_context_for,
)

Handler = Callable[[httpx.Request], httpx.Response]
T0 = "2026-11-21T07:40:00Z"
SITE = {"id": "s", "name": "S", "description": "", "created_at": T0}
USER = {
    "id": "so1",
    "name": "Sam",
    "roles": ["security_officer"],
    "enabled": True,
    "locked_until": None,
    "created_at": T0,
    "updated_at": T0,
}


def make_ca_pem(name: str = "Test cluster CA") -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM).decode()


@pytest.fixture(scope="module")
def ca_pem() -> str:
    return make_ca_pem()


def client_with(ca_pem: str, handler: Handler) -> KmsClient:
    return KmsClient(
        "kma.example:8443",
        ca_pem=ca_pem,
        ca_fingerprint=fingerprint_of(ca_pem),
        transport=httpx.MockTransport(handler),
    )


def ok(body: object, status: int = 200) -> httpx.Response:
    return httpx.Response(status, json=body)


# -- trust ------------------------------------------------------------------------------------


def test_fingerprint_is_sha256_of_der_in_uppercase_colon_hex(ca_pem: str) -> None:
    der = x509.load_pem_x509_certificate(ca_pem.encode()).public_bytes(serialization.Encoding.DER)
    digest = hashes.Hash(hashes.SHA256())
    digest.update(der)
    expected = "SHA256:" + ":".join(f"{b:02X}" for b in digest.finalize())
    assert fingerprint_of(ca_pem) == expected


def test_client_refuses_a_ca_that_does_not_match_the_pinned_fingerprint(ca_pem: str) -> None:
    other = fingerprint_of(make_ca_pem("Another cluster"))
    with pytest.raises(TrustError, match="not the pinned"):
        KmsClient("kma.example:8443", ca_pem=ca_pem, ca_fingerprint=other)


def test_client_accepts_a_pasted_lowercase_fingerprint(ca_pem: str) -> None:
    with KmsClient("kma.example:8443", ca_pem=ca_pem, ca_fingerprint=f" {fingerprint_of(ca_pem).lower()} "):
        pass


def test_client_refuses_garbage_instead_of_a_ca(ca_pem: str) -> None:
    with pytest.raises(TrustError):
        KmsClient("kma.example:8443", ca_pem="not a pem", ca_fingerprint=fingerprint_of(ca_pem))


def test_trust_fetch_recomputes_the_fingerprint(ca_pem: str) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return ok({"ca_pem": ca_pem, "fingerprint": fingerprint_of(ca_pem)})

    trust = Trust.fetch("kma.example:8443", transport=httpx.MockTransport(handler))
    assert trust == Trust(ca_pem=ca_pem, fingerprint=fingerprint_of(ca_pem))
    assert str(seen[0].url) == "https://kma.example:8443/api/v1/ca"


def test_trust_fetch_refuses_a_server_whose_claimed_fingerprint_is_wrong(ca_pem: str) -> None:
    claimed = fingerprint_of(make_ca_pem("Another cluster"))
    transport = httpx.MockTransport(lambda r: ok({"ca_pem": ca_pem, "fingerprint": claimed}))
    with pytest.raises(TrustError, match="Do not trust"):
        Trust.fetch("kma.example:8443", transport=transport)


def test_client_without_ca_pem_fetches_the_ca_and_checks_it_against_the_pin(
    ca_pem: str,
) -> None:
    transport = httpx.MockTransport(lambda r: ok({"ca_pem": ca_pem, "fingerprint": fingerprint_of(ca_pem)}))
    KmsClient("kma.example:8443", ca_fingerprint=fingerprint_of(ca_pem), transport=transport)
    with pytest.raises(TrustError):
        KmsClient(
            "kma.example:8443",
            ca_fingerprint=fingerprint_of(make_ca_pem("Another cluster")),
            transport=transport,
        )


def test_ssl_context_verifies_the_host_and_needs_tls_1_2(ca_pem: str) -> None:
    ctx = ssl_context_for(ca_pem)
    assert ctx.check_hostname is True
    assert ctx.verify_mode == ssl.CERT_REQUIRED
    assert ctx.minimum_version >= ssl.TLSVersion.TLSv1_2
    assert len(ctx.get_ca_certs()) == 1


# -- URLs and query parameters ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("user_id", "raw_path"),
    [
        ("so1", b"/api/v1/users/so1"),
        ("a/b", b"/api/v1/users/a%2Fb"),
        ("a b?c#d", b"/api/v1/users/a%20b%3Fc%23d"),
        ("..", b"/api/v1/users/%2E%2E"),
        ("50%", b"/api/v1/users/50%25"),
        ("é", b"/api/v1/users/%C3%A9"),
    ],
)
def test_odd_ids_are_quoted_into_one_path_segment(ca_pem: str, user_id: str, raw_path: bytes) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return ok(USER)

    client_with(ca_pem, handler).get_user(user_id)
    assert seen[0].url.raw_path == raw_path
    assert seen[0].url.host == "kma.example"


def test_an_empty_id_is_refused_before_any_request(ca_pem: str) -> None:
    client = client_with(ca_pem, lambda r: pytest.fail("no request expected"))
    with pytest.raises(ValueError, match="empty"):
        client.get_key("")


def test_list_parameters_drop_none_and_send_bools_and_times_plainly(ca_pem: str) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return ok({"items": [], "next_cursor": None, "total": 0})

    client = client_with(ca_pem, handler)
    client.list_keys(limit=50, state="deactivated", compromised=False, data_unit_id=None)
    client.list_audit_events(since=datetime(2026, 11, 21, 7, 40, tzinfo=UTC), order="asc")
    assert seen[0].url.path == "/api/v1/keys"
    assert dict(seen[0].url.params) == {
        "limit": "50",
        "state": "deactivated",
        "compromised": "false",
    }
    assert dict(seen[1].url.params) == {
        "limit": "100",
        "order": "asc",
        "since": "2026-11-21T07:40:00Z",
    }


def test_patch_sends_only_the_fields_given(ca_pem: str) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return ok({**USER, "enabled": False})

    user = client_with(ca_pem, handler).update_user("so1", enabled=False)
    assert user.enabled is False
    assert seen[0].method == "PATCH"
    assert json.loads(seen[0].content) == {"enabled": False}


# -- errors -------------------------------------------------------------------------------------


def test_error_json_becomes_the_typed_error(ca_pem: str) -> None:
    body = {"error": {"code": "conflict", "message": "Only deactivated keys can be destroyed."}}
    client = client_with(ca_pem, lambda r: ok(body, 409))
    with pytest.raises(Conflict) as caught:
        client.destroy_key("k1", comment="end of retention")
    assert caught.value.status == 409
    assert str(caught.value) == "Only deactivated keys can be destroyed."


def test_an_unknown_error_code_still_raises_api_error(ca_pem: str) -> None:
    body = {"error": {"code": "brand_new", "message": "Something new."}}
    with pytest.raises(ApiError) as caught:
        client_with(ca_pem, lambda r: ok(body, 400)).get_me()
    assert (type(caught.value), caught.value.code) == (ApiError, "brand_new")


@pytest.mark.parametrize(
    "response",
    [
        httpx.Response(502, text="<html>Bad gateway</html>"),
        httpx.Response(500, json={"detail": "not the contract's shape"}),
        httpx.Response(404, json={"error": "no code"}),
    ],
)
def test_an_error_body_outside_the_contract_is_internal(ca_pem: str, response: httpx.Response) -> None:
    with pytest.raises(InternalError) as caught:
        client_with(ca_pem, lambda r: response).get_status()
    assert caught.value.code == "internal"
    assert caught.value.status == response.status_code
    assert "<html>" not in str(caught.value)


def test_an_unreadable_success_body_is_internal_not_a_key_error(ca_pem: str) -> None:
    with pytest.raises(InternalError, match="cannot read"):
        client_with(ca_pem, lambda r: ok({"id": "only"})).get_key("k1")


@pytest.mark.parametrize(
    "exc",
    [
        httpx.ConnectError("[Errno 111] Connection refused"),
        httpx.ConnectTimeout("timed out"),
        httpx.ReadTimeout("timed out"),
        httpx.RemoteProtocolError("peer closed connection"),
    ],
)
def test_network_failures_are_kma_unreachable(ca_pem: str, exc: Exception) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise exc

    with pytest.raises(KmaUnreachable, match="kma.example:8443"):
        client_with(ca_pem, handler).get_status()


def test_certificate_verification_failure_is_a_trust_error(ca_pem: str) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        try:
            raise ssl.SSLCertVerificationError(1, "certificate verify failed")
        except ssl.SSLError as cause:
            raise httpx.ConnectError("TLS failed") from cause

    with pytest.raises(TrustError):
        client_with(ca_pem, handler).get_status()


# -- sessions -----------------------------------------------------------------------------------


def test_sign_in_keeps_the_token_and_sends_it_until_sign_out(ca_pem: str) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path.endswith("/auth/sign-in"):
            return ok({"token": "tok1", "expires_at": T0, "user": USER})
        if request.url.path.endswith("/auth/sign-out"):
            return httpx.Response(204)
        return ok(USER)

    client = client_with(ca_pem, handler)
    session = client.sign_in("so1", "correct horse")
    assert client.token == "tok1" == session.token
    assert json.loads(seen[0].content) == {"user_id": "so1", "passphrase": "correct horse"}
    assert "authorization" not in seen[0].headers
    client.get_me()
    assert seen[1].headers["authorization"] == "Bearer tok1"
    client.sign_out()
    assert client.token is None
    client.get_me()
    assert "authorization" not in seen[-1].headers


def test_use_token_resumes_a_saved_session(ca_pem: str) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return ok(USER)

    client = client_with(ca_pem, handler)
    client.use_token("saved")
    assert client.get_me().id == "so1"
    assert seen[0].headers["authorization"] == "Bearer saved"


def test_sign_out_of_an_expired_session_just_forgets_the_token(ca_pem: str) -> None:
    body = {"error": {"code": "unauthenticated", "message": "Session expired."}}
    client = client_with(ca_pem, lambda r: ok(body, 401))
    client.use_token("old")
    client.sign_out()
    assert client.token is None
    with pytest.raises(Unauthenticated):
        client.get_me()


# -- paging -------------------------------------------------------------------------------------


def test_iter_all_follows_cursors_and_keeps_filters(ca_pem: str) -> None:
    pages = {
        None: {"items": [SITE], "next_cursor": "c2", "total": 3},
        "c2": {"items": [SITE, SITE], "next_cursor": None, "total": 3},
    }
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return ok(pages[request.url.params.get("cursor")])

    client = client_with(ca_pem, handler)
    assert len(list(iter_all(client.list_sites, search="dal", limit=1))) == 3
    assert [r.url.params.get("search") for r in seen] == ["dal", "dal"]
    assert len(list(client.iter_sites())) == 3
    assert [p.total for p in client.iter_pages(client.list_sites)] == [3, 3]


def test_not_found_on_a_missing_site(ca_pem: str) -> None:
    body = {"error": {"code": "not_found", "message": "No site with that ID."}}
    with pytest.raises(NotFound, match="No site"):
        client_with(ca_pem, lambda r: ok(body, 404)).update_site("gone", name="x")


def test_a_pinned_ca_certificate_that_expired_with_no_renewal_is_explained() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Expired cluster CA")])
    now = datetime.now(UTC)
    expired_pem = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=30))
        .not_valid_after(now - timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
        .public_bytes(serialization.Encoding.PEM)
        .decode()
    )
    served = {"ca_pem": expired_pem, "fingerprint": fingerprint_of(expired_pem), "previous_ca_pems": []}
    with pytest.raises(
        TrustError, match="expired on .* offers no renewal of it.*Ask the KMA's administrator"
    ):
        client_with(expired_pem, lambda r: ok(served))
