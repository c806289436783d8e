"""The signed report of users and their roles, directory mapping included (issue 43's reports),
for the Auditor, the Compliance Officer or a Security Officer to hand on
(kma/services/reports/signed_report.py)."""

from __future__ import annotations

from kma.appliance import Appliance
from kma.audit.exports import iso
from kma.domain.actor import Actor
from kma.services.reports.signed_report import SignedReportRow, signed_report
from kma.services.sign_in import directory, second_factor_policy
from kma.services.users import SELECT, user_row

COLUMNS = ("kind", "id", "name", "roles", "enabled", "signs_in_with", "two_step", "created_at", "updated_at")


def _rows(kma: Appliance) -> list[list[str]]:
    rows = []
    required = second_factor_policy.required_roles(kma)
    for row in kma.store.query(f"{SELECT} ORDER BY id"):
        u = user_row(row, required)
        rows.append(
            [
                "user",
                u.id,
                u.name,
                " ".join(u.roles),
                "yes" if u.enabled else "no",
                f"directory {u.directory_account}" if u.directory_account else "local passphrase",
                "on" if u.second_factor else "required, not set up" if u.second_factor_required else "off",
                iso(u.created_at),
                iso(u.updated_at),
            ]
        )
    settings = directory.get_directory(kma)
    if settings is not None:
        state = "on" if settings.enabled else "off"
        for m in settings.group_roles:
            when = iso(settings.updated_at)
            rows.append(
                [
                    "directory_group",
                    m["group"],
                    "",
                    " ".join(m["roles"]),
                    state,
                    settings.url,
                    "",
                    "",
                    when,
                ]
            )
    return rows


def get_users_report(kma: Appliance, actor: Actor) -> SignedReportRow:
    return signed_report(kma, actor, "users", "users and their roles", COLUMNS, _rows(kma))
