"""`kma cluster status [--json]`: the cluster at a glance, through a running KMA's API;
`kma cluster renew-certificate KMA_ID`: a KMA's new listener certificate now;
`kma cluster renew-ca`: the cluster CA's next certificate now (quorum).

Further `kma cluster ...` actions hang off the same `cluster` parser (`add_cluster_commands`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from kma.cli.quorum import CONNECTION_HELP, _connected, _talking


def add_cluster_commands(sub: Any) -> None:
    c = sub.add_parser("cluster", help="the cluster of a running KMA", description=CONNECTION_HELP)
    c_sub = c.add_subparsers(dest="cluster_command", required=True, metavar="ACTION")
    p = _connected(
        c_sub.add_parser(
            "status", help="sites, KMAs (leader, voter, responding, locked, lag), agents, failure tolerance"
        )
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=run_status)
    r = _connected(
        c_sub.add_parser(
            "renew-certificate",
            help="give a KMA a new listener certificate now (Security Officer); each KMA also "
            "renews its own before it expires",
            description=CONNECTION_HELP,
        )
    )
    r.add_argument("kma_id", help="the KMA whose certificate to renew")
    r.set_defaults(run=run_renew_certificate)
    a = _connected(
        c_sub.add_parser(
            "renew-ca",
            help="renew the cluster CA certificate now (Security Officer, quorum); the cluster also "
            "renews it by itself before it expires",
            description=CONNECTION_HELP,
        )
    )
    a.set_defaults(run=run_renew_ca)


def _seconds(value: float | None) -> str:
    return "never" if value is None else f"{value:.1f} s ago"


@_talking
def run_renew_certificate(args: argparse.Namespace, client: Any) -> int:
    kma = client.renew_kma_certificate(args.kma_id)
    if kma.certificate_renewal_requested:
        print(f"KMA {kma.id} was asked to renew its listener certificate; it does within a second or so.")
    else:
        until = kma.certificate_expires_at
        print(f"KMA {kma.id}'s listener certificate renewed: valid until {until:%Y-%m-%d %H:%M} UTC.")
    return 0


@_talking
def run_renew_ca(args: argparse.Namespace, client: Any) -> int:
    op = client.renew_cluster_ca()
    if op.state == "executed":
        print("The cluster CA certificate was renewed; every KMA re-issues its certificates under it.")
    else:
        print(
            f"Renewal of the cluster CA certificate submitted as quorum operation {op.id}: "
            f"it needs {op.approvals_needed} key split members' approvals (`kma quorum approve {op.id}`)."
        )
    return 0


def _kma_line(k: Any) -> str:
    kind = " witness" if k.witness else " voter" if k.voter else " non-voter"
    role = ("leader" if k.leader else "") + kind
    lag = (
        "lag unknown"
        if k.replication_lag is None
        else (f"lag {k.replication_lag.depth} writes ({k.replication_lag.age_seconds:.1f} s)")
    )
    return (
        f"  {k.id:<12} {k.name:<20} {role.strip():<16} "
        f"{'responding' if k.responding else 'NOT RESPONDING':<14} {'LOCKED' if k.locked else 'unlocked':<8} "
        f"{k.master_key_text}; {k.versions_text}; {lag}; last contact {_seconds(k.last_contact_seconds)}"
        + (f"; certificate until {k.certificate_expires_at:%Y-%m-%d}" if k.certificate_expires_at else "")
        + (" (warning)" if k.certificate_warning else "")
    )


@_talking
def run_status(args: argparse.Namespace, client: Any) -> int:
    topo = client.get_topology()
    if args.json:
        print(json.dumps(dataclasses.asdict(topo), indent=2, default=str))
        return 0
    print(
        f"Cluster {topo.cluster_name} (as KMA {topo.answered_by} sees it), "
        f"cluster version {topo.cluster_version}"
    )
    print(topo.failure_tolerance.summary)
    for site in topo.sites:
        a = site.agents
        witnesses = sum(k.witness for k in site.kmas)
        kmas = f"{len(site.kmas) - witnesses} KMAs" + (
            f" and {witnesses} witness (no key service)" if witnesses else ""
        )
        print(
            f"\nSite {site.name} ({site.id}): {kmas}; agents {a.enrolled} enrolled, "
            f"{a.disabled} disabled, {a.seen_last_hour} seen in the last hour"
        )
        for k in site.kmas:
            print(_kma_line(k))
    forwarding = topo.audit_forwarding
    if forwarding is not None:
        why = forwarding.last_error or "retrying"
        state = "connected" if forwarding.connected else f"not connected ({why})"
        print(f"Audit forwarding to {forwarding.address}: {state}; {forwarding.lag_events} events behind")
    for link in topo.links:
        lag = "unknown" if link.lag_seconds is None else f"{link.lag_seconds:.1f} s"
        print(f"\nLink {link.site_a} - {link.site_b}: lag {lag}")
    return 0
