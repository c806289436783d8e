"""A general key's rotation due date on the Keys page and in its details (issue 38), against a real
KMA: a key of a policy with a rotation period shows when the KMA will make its successor; a tape
key shows none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.gui.helpers import WAIT_MS, open_page, sign_in, wait_idle
from tests.support.agents import enroll, kmip, new_passphrase
from ui.format import when
from ui.lists.details import field_rows
from ui.pages.keys import COLUMNS, LABELS, detail_texts

pytestmark = [pytest.mark.gui]
DAY = 86400
SERVER = "t10k-bos-01"


def test_the_keys_page_shows_when_a_general_key_rotates(
    qtbot: Any, controller: Any, fresh_kma: Any, tmp_path: Path
) -> None:
    co = fresh_kma.client("co")
    co.create_key_policy(
        "rotating-90d",
        encryption_period=365 * DAY,
        cryptoperiod=365 * DAY,
        general_keys=True,
        rotation_period=90 * DAY,
    )
    co.create_key_group("rotating", "rotating-90d")
    co.set_key_group_agents("rotating", [SERVER])
    enroll(fresh_kma, SERVER, tmp_path / "server", new_passphrase(fresh_kma, SERVER))
    client = kmip(tmp_path / "server")
    try:
        general = client.create_and_activate(group="rotating")
        tape, _ = client.write_key("E38301", "backup-boston")
    finally:
        client.close()
    shown = fresh_kma.client("op").get_key(general)
    assert shown.activated_at is not None and shown.rotation_due_at is not None
    assert (shown.rotation_due_at - shown.activated_at).total_seconds() == 90 * DAY
    assert fresh_kma.client("op").get_key(tape).rotation_due_at is None

    # The Keys page's "Rotation due" column, for the general key and not for the tape key
    window = sign_in(qtbot, controller, fresh_kma, "op")
    page = open_page(qtbot, window, "keys")
    wait_idle(qtbot, controller.ops)
    column = [c.key for c in COLUMNS].index("rotation_due_at")
    assert COLUMNS[column].title == "Rotation due"

    def due(key_id: str) -> str | None:
        model = page.model
        ids = [str(model.index(r, 0).data()) for r in range(model.rowCount())]
        return str(model.index(ids.index(key_id), column).data() or "") if key_id in ids else None

    qtbot.waitUntil(lambda: due(general) is not None and due(tape) is not None, timeout=WAIT_MS)
    assert due(general) == when(shown.rotation_due_at) and due(tape) in ("", "—")
    # ... and the key's details word it
    rows = dict(field_rows(shown, LABELS, detail_texts(shown)))
    assert rows["Rotation due (the KMA makes its successor)"] == when(shown.rotation_due_at)
