"""Services return typed rows (a dataclass the route's schema reads, as `sites.SiteRow`), not bare
`dict[str, Any]`s whose keys only a reader of the SQL knows (docs/architecture.md).

A new public service function returning a bare dict fails here; so does an entry below once its
function returns a typed row (take it off the list: the list only shrinks)."""

from __future__ import annotations

import ast
from pathlib import Path

SERVICES = Path(__file__).resolve().parents[2] / "kma" / "services"

# Not yet typed (issue 44): each returns a bare dict today.
NOT_YET_TYPED = frozenset(
    {
        # Written on branches merged together with this guard (session 11): typed next.
        "agent_keys.key_access.mine",
        "agents.drive_fields",
        "directory.check_settings",
        "directory.get_directory",
        "media_pools.create_media_pool",
        "media_pools.get_media_pool",
        "media_pools.update_media_pool",
        "media_views.migration_view",
        "quorum.key_split.key_split_view",
        "quorum.key_split.set_lifetime",
        "second_factor.enrol",
        "transfer_export.export_transfer_file",
        "transfer_partners.get_transfer_identity",
        "transfer_partners.get_transfer_partner",
        "transfer_partners.partner_by_identity",
        "transfer_partners.set_transfer_partner_enabled",
        "agent_renewal.renew",
        "agents.get_agent",
        "agents.create_agent",
        "agents.update_agent",
        "alert_channels.send_test",
        "alerts.describe_channel",
        "audit_export.report",
        "audit_forwarding.get_setting",
        "audit_forwarding.set_setting",
        "audit_log.where_clause",
        "audit_log.iter_events",
        "audit_retention.get_retention",
        "audit_retention.set_retention",
        "audit_retention.checkpoint",
        "audit_retention.prune",
        "audit_retention.list_checkpoints",
        "backup_schedule.get_schedule",
        "backup_schedule.set_schedule",
        "backups.core_status",
        "backups.list_backups",
        "backups.get_backup",
        "backups.create_backup",
        "backups.readiness",
        "certificate_renewal.renew",
        "certificate_renewal.request",
        "dashboard.key_counts",
        "dashboard.dashboard",
        "dashboard.status",
        "data_units.get_data_unit",
        "data_units.create_data_unit",
        "data_units.update_data_unit",
        "enrollment.cluster_kmas",
        "enrollment.enroll",
        "entry_signatures.entry",
        "entry_signatures.routes",
        "history.key_history",
        "history.data_unit_history",
        "history.agent_history",
        "keys.get_key",
        "keys.issue_key",
        "keys.compromise_key",
        "keys.destroy_key",
        "kmas.get_kma",
        "kmas.update_kma",
        "master_keys.status",
        "policies.get_policy",
        "policies.create_policy",
        "policies.update_policy",
        "policies.get_group",
        "policies.create_group",
        "policies.update_group",
        "policies.set_group_agents",
        "quorum.locking.lock_kma",
        "series.series",
        "users.user_row",
        "users.get_user",
        "users.create_user",
        "users.check_user_changes",
        "users.update_user",
    }
)


def _bare_dict_services() -> set[str]:
    found = set()
    for path in sorted(SERVICES.rglob("*.py")):
        module = ".".join(path.relative_to(SERVICES).with_suffix("").parts)
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or node.name.startswith("_"):
                continue
            returns = ast.unparse(node.returns) if node.returns is not None else ""
            if "dict[" in returns and "Any" in returns:
                found.add(f"{module}.{node.name}")
    return found


def test_no_new_service_returns_a_bare_dict() -> None:
    new = _bare_dict_services() - NOT_YET_TYPED
    assert not new, f"services returning a bare dict: {sorted(new)}; return a typed row (a dataclass)"


def test_a_service_typed_since_leaves_the_list() -> None:
    typed = NOT_YET_TYPED - _bare_dict_services()
    assert not typed, f"these return typed rows now: take them off NOT_YET_TYPED: {sorted(typed)}"
