"""The KMAs list's cluster actions (Security Officer): add a KMA, a new one-time KMA passphrase,
remove a KMA. All three are quorum-protected, so each form offers key split credentials. The
Cluster page offers adding and removing from its picture with the same dialogs: `page` is either
(a widget with `ctx`); both read again by themselves once a KMA changed.

Adding a KMA (or a new passphrase) answers with the one-time KMA passphrase whether the
operation ran or is pending: it is shown once, with the voter warning when the voter count would
be even (two voters: management writes stop when either is lost). A witness (a voter with no key
service, for two-site layouts) is added the same way, with its Raft address only. The installer types it into
`kma init` with `mode = "join"` on the new machine once the quorum has approved.
"""

from __future__ import annotations

import html
from typing import Any, Protocol, cast

from PySide6.QtWidgets import QWidget

from app.context import AppContext
from app.writes import kma_membership as writes
from ui.dialogs.form_field import Field
from ui.dialogs.secret_dialog import OneTimeSecretDialog
from ui.lists.list_spec import ActionSpec
from ui.quorum.widgets import QuorumFormDialog


class Page(Protocol):
    """The page a form opens over, its parent, whose `ctx` it uses: the KMAs list (a ListPage) or
    the Cluster page (ui/pages/cluster.py, which imports this module), both QWidgets."""

    @property
    def ctx(self) -> AppContext: ...


def _site_choices(client: Any) -> list[tuple[str, Any]]:
    return [(s.name, s.id) for s in client.iter_sites()]


def show_kma_passphrase(page: Page, done: Any) -> OneTimeSecretDialog:
    """The one-time KMA passphrase (and what to know about voters), shown once."""
    op = done.op
    so_far = f"{len(op.approvals)} of {op.approvals_needed} so far"
    state = "It works now." if op.state == "executed" else f"It works once the quorum approved ({so_far})."
    warning = f"<p><b>Warning:</b> {html.escape(done.voter_warning)}</p>" if done.voter_warning else ""
    dialog = OneTimeSecretDialog(
        "One-time KMA passphrase",
        f"<p>{html.escape(op.summary)}.</p><p>On the new machine, put this passphrase in the answers "
        f'file of <tt>kma init</tt> (<tt>mode = "join"</tt>). {state}</p>{warning}',
        done.kma_passphrase,
        cast(QWidget, page),
        what="KMA passphrase",
        warning="<b>This is shown only once.</b> The KMA keeps only its hash. If it is lost, ask for "
        "a new KMA passphrase (the old one stops working).",
    )
    dialog.open()
    page.last_secret_dialog = dialog  # type: ignore[attr-defined]
    return dialog


def add_kma(page: Page, _obj: Any) -> QuorumFormDialog:
    dialog = QuorumFormDialog(
        page.ctx,
        "Add a KMA",
        [
            Field("id", "KMA ID", "id", required=True),
            Field("name", "Name", required=True),
            Field("site_id", "Site", "choice", required=True, load_choices=_site_choices),
            Field("management_address", "Management address", required=True, help="HOST:PORT for managers"),
            Field("service_address", "Service address", required=True, help="HOST:PORT for agents"),
            Field(
                "raft_address",
                "Raft address",
                required=True,
                help="HOST:PORT the other KMAs reach for replication",
            ),
            Field(
                "voter",
                "Raft voter",
                "bool",
                default=True,
                help="At most 5 KMAs vote; others are read replicas. An odd number of voters is "
                "best: two voters stop management writes when either is lost.",
            ),
        ],
        lambda v: writes.add_kma(
            v["id"],
            v["site_id"],
            name=v["name"],
            management_address=v["management_address"],
            service_address=v["service_address"],
            raft_address=v["raft_address"],
            voter=v["voter"],
            credentials=v["credentials"],
        ),
        lambda done: show_kma_passphrase(page, done),
        what="the KMA's entry is created",
        ok_text="Add KMA",
        intro="The new machine then joins with <tt>kma init</tt> and the one-time KMA passphrase this "
        'gives. A KMA on embedded SQLite (the Cluster page says "embedded store") must first become '
        "a cluster node, or no KMA can join it: <tt>kma convert-to-cluster --data-dir DIR "
        "--raft-address HOST:PORT</tt>, then restart it (docs/cluster.md).",
        busy_text="Adding KMA…",
        parent=page,
    )
    dialog.open()
    return dialog


def add_witness(page: Page, _obj: Any) -> QuorumFormDialog:
    dialog = QuorumFormDialog(
        page.ctx,
        "Add a witness",
        [
            Field("id", "Witness ID", "id", required=True),
            Field("name", "Name", required=True),
            Field(
                "site_id",
                "Site",
                "choice",
                required=True,
                load_choices=_site_choices,
                help="A third place, apart from the sites of the KMAs (add a site for it first)",
            ),
            Field(
                "raft_address", "Raft address", required=True, help="HOST:PORT the KMAs reach for replication"
            ),
        ],
        lambda v: writes.add_kma(
            v["id"],
            v["site_id"],
            name=v["name"],
            raft_address=v["raft_address"],
            witness=True,
            credentials=v["credentials"],
        ),
        lambda done: show_kma_passphrase(page, done),
        what="the witness's entry is created",
        ok_text="Add witness",
        intro="A witness is a Raft voter with no key service: no agents, no keys, no listeners. Two "
        "sites with two KMAs each add one at a third place, so that losing either site leaves "
        "a majority (3 of 5) and management writes go on. It joins like a KMA (<tt>kma init</tt>, "
        "then <tt>kma serve</tt> runs only its Raft node).",
        busy_text="Adding witness…",
        parent=page,
    )
    dialog.open()
    return dialog


def new_kma_passphrase(page: Page, kma: Any) -> QuorumFormDialog:
    dialog = QuorumFormDialog(
        page.ctx,
        f"New KMA passphrase for {kma.id}",
        [],
        lambda v: writes.set_kma_passphrase(kma.id, credentials=v["credentials"]),
        lambda done: show_kma_passphrase(page, done),
        what="the new passphrase works",
        intro=f"A machine that joins with the new passphrase becomes KMA <b>{html.escape(kma.id)}</b> "
        "(how a dead KMA is replaced); the certificates of any earlier machine stop working.",
        ok_text="Make passphrase",
        busy_text="Asking…",
        parent=page,
    )
    dialog.open()
    return dialog


def remove_kma(page: Page, kma: Any) -> QuorumFormDialog:
    dialog = QuorumFormDialog(
        page.ctx,
        f"Remove KMA {kma.id}",
        [],
        lambda v: writes.remove_kma(kma.id, credentials=v["credentials"]),
        what="the KMA is removed",
        intro=f"Remove <b>{html.escape(kma.name)}</b> ({html.escape(kma.id)}) from the cluster? Its "
        "certificates stop working at once and it leaves Raft. Its history stays.",
        ok_text="Remove KMA",
        busy_text="Removing KMA…",
        danger=True,
        parent=page,
    )
    dialog.open()
    return dialog


def _member(kma: Any) -> bool:
    return getattr(kma, "removed_at", None) is None


ACTIONS = [
    ActionSpec("Add KMA…", add_kma, "quorum.submit", needs="none", toolbar=True),
    ActionSpec("Add witness…", add_witness, "quorum.submit", needs="none"),
    ActionSpec("New KMA passphrase…", new_kma_passphrase, "quorum.submit", enabled=_member),
    ActionSpec("Remove KMA…", remove_kma, "quorum.submit", enabled=_member, danger=True),
]
