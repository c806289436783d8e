"""kms_client models and error types: parsing the contract's JSON shapes (docs/api.md)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kms_client import (
    ApiError,
    AuditEvent,
    BadRequest,
    CaInfo,
    ChainReport,
    ClusterUnavailable,
    Conflict,
    Dashboard,
    DataUnit,
    EnrollmentPassphrase,
    Forbidden,
    InternalError,
    Key,
    KeyGroup,
    KeyPolicy,
    Kma,
    KmaLocked,
    KmaUnreachable,
    KmsError,
    LockedOut,
    NotFound,
    Page,
    PayloadTooLarge,
    Session,
    Site,
    Status,
    TrustError,
    Unauthenticated,
    User,
    ValidationFailed,
    api_error,
    read,
)

T0 = "2026-11-21T07:40:00Z"
T0_DT = datetime(2026, 11, 21, 7, 40, tzinfo=UTC)

USER = {
    "id": "so1",
    "name": "Sam Officer",
    "roles": ["security_officer", "auditor"],
    "enabled": True,
    "locked_until": None,
    "created_at": T0,
    "updated_at": "2026-11-21T08:00:00+00:00",
}
KMA = {
    "id": "kma1",
    "name": "Dallas 1",
    "site_id": "dallas",
    "management_address": "10.0.0.1:8443",
    "service_address": "10.0.0.1:3001",
    "version": "0.1.0",
    "locked": False,
    "key_pool_size": 1000,
    "pool_ready": 998,
    "created_at": T0,
}
KEY = {
    "id": "k-0001",
    "key_group_id": "tapes",
    "data_unit_id": None,
    "kma_id": "kma1",
    "algorithm": "AES-256",
    "state": "ready",
    "compromised": False,
    "created_at": T0,
    "activated_at": None,
    "protect_until": None,
    "deactivate_at": None,
    "destroyed_at": None,
    "destroy_comment": None,
}


def test_times_become_aware_utc_datetimes_and_nulls_stay_none() -> None:
    user = read(User, USER)
    assert user.created_at == T0_DT
    assert user.created_at.tzinfo is not None
    assert user.updated_at == datetime(2026, 11, 21, 8, 0, tzinfo=UTC)
    assert user.locked_until is None
    assert user.roles == ("security_officer", "auditor")


def test_a_user_says_what_the_kma_lets_them_do_and_refuses_names_the_kma_has_not() -> None:
    user = read(User, {**USER, "permissions": ["signed_in", "users.read", "users.write"]})
    assert user.may("users.write") and not user.may("agents.write")
    with pytest.raises(ValueError, match="agents.wirte"):
        user.may("agents.wirte")  # a typo in the manager is loud, not a silently hidden button
    assert not read(User, USER).may("users.read")  # a KMA older than `permissions` grants nothing


def test_a_time_without_offset_is_taken_as_utc() -> None:
    user = read(User, {**USER, "locked_until": "2026-11-21T07:55:00"})
    assert user.locked_until == datetime(2026, 11, 21, 7, 55, tzinfo=UTC)


def test_unknown_fields_from_a_newer_kma_are_ignored() -> None:
    site = read(Site, {"id": "dallas", "name": "Dallas", "description": "", "created_at": T0, "new": 1})
    assert site == Site(id="dallas", name="Dallas", description="", created_at=T0_DT)


def test_models_are_frozen() -> None:
    site = read(Site, {"id": "s", "name": "S", "description": "d", "created_at": T0})
    with pytest.raises(AttributeError):
        site.name = "other"  # type: ignore[misc]


def test_status() -> None:
    status = read(
        Status,
        {
            "cluster_name": "prod",
            "kma_id": "kma1",
            "kma_name": "Dallas 1",
            "site_id": "dallas",
            "version": "0.1.0",
            "locked": True,
            "autonomous_unlock": False,
            "time": T0,
            "warnings": ["only one KMA in the cluster"],
        },
    )
    assert status.locked is True
    assert status.time == T0_DT
    assert status.warnings == ("only one KMA in the cluster",)


def test_session_keeps_the_token_out_of_repr() -> None:
    session = read(Session, {"token": "s3cret-token", "expires_at": T0, "user": USER})
    assert session.token == "s3cret-token"
    assert session.user.id == "so1"
    assert session.expires_at == T0_DT
    assert "s3cret-token" not in repr(session)


def test_kma_and_dashboard() -> None:
    assert read(Kma, KMA).pool_ready == 998
    dash = read(
        Dashboard,
        {
            "cluster_name": "prod",
            "sites": 2,
            "kmas": [KMA],
            "keys_by_state": {"ready": 998, "protect_and_process": 2},
            "data_units": 2,
            "agents": 3,
            "users": 9,
            "pending_quorum_operations": 1,
            "warnings": [],
        },
    )
    assert dash.kmas == (read(Kma, KMA),)
    assert dash.keys_by_state == {"ready": 998, "protect_and_process": 2}
    assert dash.pending_quorum_operations == 1


def test_key_policy_group_agent_data_unit() -> None:
    policy = read(
        KeyPolicy,
        {
            "id": "seven-years",
            "description": "tapes",
            "encryption_period": 86400,
            "cryptoperiod": 220752000,
            "allow_export": False,
            "allow_import": True,
            "agents_may_revoke": False,
            "created_at": T0,
            "updated_at": T0,
        },
    )
    assert (policy.encryption_period, policy.cryptoperiod) == (86400, 220752000)
    group = read(
        KeyGroup,
        {
            "id": "tapes",
            "description": "",
            "policy_id": "seven-years",
            "agent_ids": ["drive1", "drive2"],
            "created_at": T0,
            "updated_at": T0,
        },
    )
    assert group.agent_ids == ("drive1", "drive2")
    unit = read(
        DataUnit,
        {
            "id": "E00001",
            "description": "",
            "state": "readable_normal",
            "key_count": 1,
            "created_at": T0,
            "updated_at": T0,
        },
    )
    assert (unit.id, unit.state, unit.key_count) == ("E00001", "readable_normal", 1)


def test_key_with_nullable_fields() -> None:
    key = read(Key, KEY)
    assert key.data_unit_id is None
    assert key.activated_at is None
    destroyed = read(
        Key,
        {
            **KEY,
            "state": "destroyed",
            "destroyed_at": "2026-12-01T00:00:00Z",
            "destroy_comment": "end of retention",
        },
    )
    assert destroyed.destroyed_at == datetime(2026, 12, 1, tzinfo=UTC)
    assert destroyed.destroy_comment == "end of retention"


def test_audit_event_and_chain_report() -> None:
    event = read(
        AuditEvent,
        {
            "id": 42,
            "kma_id": "kma1",
            "chain_seq": 41,
            "created_at": T0,
            "site_id": "dallas",
            "operation": "key.destroy",
            "severity": "warning",
            "condition": "success",
            "event_class": "key",
            "entity_id": "op1",
            "entity_address": "10.0.0.9",
            "message": "Key destroyed.",
            "retention": "long",
            "subject_type": "key",
            "subject_id": "k-0001",
            "hash": "ab" * 32,
        },
    )
    assert (event.id, event.chain_seq, event.subject_id) == (42, 41, "k-0001")
    report = read(
        ChainReport, {"intact": False, "events_checked": 10, "first_bad_event_id": 7, "reason": "hash"}
    )
    assert report.first_bad_event_id == 7
    ok = read(ChainReport, {"intact": True, "events_checked": 10, "first_bad_event_id": None, "reason": None})
    assert ok.first_bad_event_id is None


def test_enrollment_passphrase_is_not_in_repr_and_ca_info() -> None:
    enrollment = read(EnrollmentPassphrase, {"agent_id": "drive1", "passphrase": "one-time"})
    assert enrollment.passphrase == "one-time"
    assert "one-time" not in repr(enrollment)
    assert read(CaInfo, {"ca_pem": "PEM", "fingerprint": "SHA256:AB"}).fingerprint == ("SHA256:AB")


def test_page_parses_items_and_cursor() -> None:
    page = read(Page[Key], {"items": [KEY], "next_cursor": "c2", "total": 5})
    assert page.items == [read(Key, KEY)]
    assert (page.next_cursor, page.total) == ("c2", 5)
    last = read(Page[Key], {"items": [], "next_cursor": None, "total": 0})
    assert last.next_cursor is None


@pytest.mark.parametrize(
    ("code", "status", "cls"),
    [
        ("bad_request", 400, BadRequest),
        ("validation_failed", 422, ValidationFailed),
        ("unauthenticated", 401, Unauthenticated),
        ("forbidden", 403, Forbidden),
        ("not_found", 404, NotFound),
        ("conflict", 409, Conflict),
        ("payload_too_large", 413, PayloadTooLarge),
        ("locked_out", 429, LockedOut),
        ("kma_locked", 503, KmaLocked),
        ("cluster_unavailable", 503, ClusterUnavailable),
        ("internal", 500, InternalError),
    ],
)
def test_each_error_code_gets_its_class(code: str, status: int, cls: type[ApiError]) -> None:
    err = api_error(status, code, "Plain sentence.")
    assert type(err) is cls
    assert isinstance(err, ApiError)
    assert isinstance(err, KmsError)
    assert (err.status, err.code, err.message) == (status, code, "Plain sentence.")
    assert str(err) == "Plain sentence."


def test_an_unknown_error_code_is_a_plain_api_error() -> None:
    err = api_error(418, "quorum_pending", "Waiting for approvals.")
    assert type(err) is ApiError
    assert err.code == "quorum_pending"


def test_network_and_trust_errors_are_kms_errors_but_not_api_errors() -> None:
    for cls in (KmaUnreachable, TrustError):
        assert issubclass(cls, KmsError)
        assert not issubclass(cls, ApiError)
