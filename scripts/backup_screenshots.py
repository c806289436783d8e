"""Render the one-KMA rule on a new KMA's dashboard: docs/screenshots/dashboard_one_kma.png.

A KMA made with `kma init` (pool of 6 keys): the core security backup and one database backup
are taken, three keys issued, and the refilled pool's three new keys wait for the next backup.
The dashboard shows the backup line (age, Ready keys, waiting keys, when they run out) and the
warning.

    python scripts/backup_screenshots.py [--out docs/screenshots]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = parser.parse_args()
    from screenshot_session import offscreen_manager

    from app.session.profiles import ConnectionProfile
    from app.session.sign_in import sign_in
    from manager.screenshots import grab, settle

    app, controller, tmp = offscreen_manager("kms-backup-screenshots-")
    from tests.support.first_setup import one_kma_with_keys_waiting

    kma = one_kma_with_keys_waiting(tmp)
    try:
        profile = ConnectionProfile("New Vault", kma.address, "admin", kma.fingerprint)  # type: ignore[attr-defined]
        window = controller.signed_in(sign_in(profile, "admin passphrase 1"), profile)
        window.resize(1280, 800)
        window.show_page("dashboard")
        settle(controller.ops)
        print(grab(window, args.out / "dashboard_one_kma.png"))
        window.close()
        controller.ops.wait_idle(3000)
    finally:
        kma.stop()  # type: ignore[attr-defined]
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
