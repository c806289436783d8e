"""Renewing the cluster CA certificate when a Security Officer decides, under quorum (issue 38): the
renewal itself is kma/services/certificates/ca_renewal.py; this KMA follows it at once, the others within
`check_every` (kma.toml [certificates])."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kma.appliance import Appliance
from kma.errors import Conflict
from kma.services.backups import describe_duration
from kma.services.certificates.ca_renewal import day, renewal
from kma.services.certificates.certificate_expiry import serial_and_expiry, settings
from kma.services.certificates.certificate_renewal import certificate_watch
from kma.services.quorum.key_split import Quorum
from kma.services.quorum.op_type import OpType, Outcome, Prepared


def _prepare(kma: Appliance, op_id: str, request: Mapping[str, Any]) -> Prepared:
    pem = str(kma.store.scalar("SELECT ca_cert_pem FROM cluster WHERE id = 1"))
    serial, end = serial_and_expiry(pem)
    validity = describe_duration(settings(kma).ca_validity)
    summary = (
        f"Renew the cluster CA certificate now (serial {serial}, valid until {day(end)}): a new one for the "
        f"same name and key, valid {validity}; every KMA re-issues its certificates under it, agents "
        "and managers move to it at their next renewal or sign-in"
    )
    return Prepared(summary, {"serial": serial}, {"serial": serial}, exclusive=True)


def _execute(kma: Appliance, quorum: Quorum, op_id: str, p: Mapping[str, Any]) -> Outcome:
    serial, _ = serial_and_expiry(str(kma.store.scalar("SELECT ca_cert_pem FROM cluster WHERE id = 1")))
    if serial != p["serial"]:
        raise Conflict("The cluster CA certificate was renewed since this operation was submitted.")
    requested_by = kma.store.scalar("SELECT requested_by FROM pending_quorum_ops WHERE id = ?", (op_id,))
    change = renewal(kma, quorum.master, f"a quorum decided, asked by {requested_by or 'a Security Officer'}")
    return Outcome(change, certificate_watch(kma).wake)


RENEW_CLUSTER_CA = OpType("renew_cluster_ca", _prepare, _execute)
