"""Each demo role sees the areas its roles allow, and every one of them loads without error."""

from __future__ import annotations

import pytest

from tests.gui.helpers import open_page, sign_in

pytestmark = pytest.mark.gui

EVERYONE = {"dashboard", "cluster", "sites", "settings", "planning"}
EXPECTED = {
    "so": EVERYONE
    | {
        "users",
        "directory",
        "key_policies",
        "key_groups",
        "agents",
        "audit",
        "quorum",
        "locking",
        "backups",
        "alerts",
        "transfer_partners",
        "media_pools",
    },
    "co": EVERYONE
    | {
        "key_policies",
        "key_groups",
        "agents",
        "data_units",
        "keys",
        "audit",
        "transfer_partners",
        "media_pools",
    },
    "op": EVERYONE
    | {"key_policies", "key_groups", "agents", "data_units", "keys", "transfer_partners", "media_pools"},
    "backup": EVERYONE | {"backups"},
    "auditor": EVERYONE
    | {
        "users",
        "directory",
        "key_policies",
        "key_groups",
        "agents",
        "data_units",
        "keys",
        "audit",
        "quorum",
        "locking",
        "backups",
        "alerts",
        "transfer_partners",
        "media_pools",
    },
    "qm1": EVERYONE | {"quorum", "locking"},  # quorum.read: the key split and lock state they approve
    "admin": EVERYONE
    | {
        "users",
        "directory",
        "key_policies",
        "key_groups",
        "agents",
        "data_units",
        "keys",
        "audit",
        "quorum",
        "locking",
        "backups",
        "alerts",
        "transfer_partners",
        "media_pools",
    },
}


@pytest.mark.parametrize("user_id", sorted(EXPECTED))
def test_role_shows_its_areas_and_each_loads(qtbot, controller, demo_kma, user_id):
    window = sign_in(qtbot, controller, demo_kma, user_id)
    assert set(window.visible_page_keys()) == EXPECTED[user_id]
    errors = []
    controller.presenter.shown.connect(errors.append)
    for key in window.visible_page_keys():
        open_page(qtbot, window, key)
    assert errors == [], f"{user_id}: {[e.what for e in errors]}"
    assert not window.reconnect_banner.isVisible()
