"""The Security Officer's "Renew cluster CA…" on the Cluster page: the cluster CA's next certificate
now, under quorum (the cluster also renews it by itself before it expires; docs/security.md)."""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from app.context import AppContext
from app.writes.cluster_ca import renew_cluster_ca
from ui.quorum.widgets import QuorumFormDialog


def open_ca_renewal(ctx: AppContext, parent: QWidget) -> QuorumFormDialog:
    """The quorum dialog that renews the cluster CA certificate."""
    dialog = QuorumFormDialog(
        ctx,
        "Renew the cluster CA certificate",
        [],
        lambda v: renew_cluster_ca(credentials=v["credentials"]),
        what="the cluster CA certificate is renewed",
        intro="Give the cluster CA a <b>new certificate for the same name and key</b>, valid from now. "
        "Every KMA re-issues its own certificates under it. Drives and managers that trust the current "
        "one keep working until it expires, and take the new one as they renew their certificate or "
        "sign in. The cluster does this by itself before the CA certificate expires: renew now only "
        "when your policy asks for it.",
        ok_text="Renew CA certificate",
        busy_text="Renewing the CA certificate…",
        parent=parent,
    )
    dialog.setObjectName("caRenewalDialog")
    dialog.open()
    return dialog
