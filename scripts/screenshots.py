"""Render every page of the KMS manager against a demo KMA into docs/screenshots/<page>.png.

Starts ``python -m kma demo`` + ``serve`` in a temporary folder, signs in as the demo ``admin``
(every role, so every page shows), renders offscreen at 1280x800, and stops the KMA. Settings go
to a temporary folder too, so your own profiles are untouched.

    python scripts/screenshots.py [--out docs/screenshots]
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

    import cluster_screenshots  # scripts/ (next to this file)
    import quorum_screenshots
    import setup_screenshots
    from screenshot_session import offscreen_manager, signed_in_to_demo

    from manager.screenshots import grab, render_pages, settle

    app, controller, tmp = offscreen_manager("kms-screenshots-")
    with signed_in_to_demo(controller, tmp) as (signed, profile, demo):
        quorum_screenshots.seed(signed.client, demo)  # pending approvals for the inbox
        window = controller.signed_in(signed, profile)
        settle(controller.ops)
        paths = render_pages(window, controller.ops, args.out)
        paths += render_dialogs(window, controller, profile, args.out, grab, settle)
        paths += render_reports(window, controller, args.out, grab, settle)
        paths += quorum_screenshots.render(window, controller, demo, args.out, grab, settle)
        paths += render_planning(args.out, grab)
        paths += cluster_screenshots.render_synthetic(args.out, grab)  # two sites, one KMA down; twenty
        paths += setup_screenshots.render(args.out, grab, settle, controller.ops)  # the set-up wizard, a card
        for path in paths:
            print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
        window.close()
        controller.ops.wait_idle(3000)
    return 0


def render_dialogs(window, controller, profile, out, grab, settle) -> list[Path]:
    """The windows a user meets outside the pages: sign-in, first-contact trust, a key's
    details, and the one-time enrollment passphrase."""
    from ui.dialogs.secret_dialog import OneTimeSecretDialog
    from ui.lists.details import DetailsDialog
    from ui.sign_in_window import SignInWindow
    from ui.trust_dialog import TrustDialog

    paths = []
    sign_in_window = SignInWindow(controller.ops, reauth_profile=profile)
    sign_in_window.show()
    paths.append(grab(sign_in_window, out / "sign_in.png"))
    sign_in_window.close()

    trust = TrustDialog(profile.address, profile.ca_fingerprint, window)
    trust.show()
    paths.append(grab(trust, out / "trust_ca.png"))
    trust.close()

    keys = window.show_page("keys") or window.page("keys")
    settle(controller.ops)
    keys = window.page("keys")
    active = next((k for k in keys.model.objects() if k.data_unit_id), None)
    if active is not None:
        from ui.audit.history import history_tab

        dialog = DetailsDialog(f"Key {active.id}", active, window)
        dialog.add_tab(history_tab(controller.ctx, "key", active.id, dialog), "History")
        dialog.show()
        settle(controller.ops)
        paths.append(grab(dialog, out / "key_details.png"))
        dialog.close()
    paths += render_destroyed_key(window, controller, out, grab, settle)

    demo = window.show_demo_credentials()
    demo.show()
    settle(controller.ops)
    paths.append(grab(demo, out / "demo_credentials.png"))
    demo.close()

    from ui.user_guide import UserGuide

    guide = UserGuide.show_for(window)
    paths.append(grab(guide, out / "user_guide.png"))
    guide.close()

    from ui.dialogs.form_dialog import FormDialog
    from ui.dialogs.form_field import Field

    form = FormDialog(
        controller.ctx,
        "New key group",
        [Field("id", "Key group ID", "id", required=True), Field("description", "Description")],
        lambda _v: None,
        parent=window,
        ok_text="Create key group",
    )
    form.show()
    form.editors["id"].setText("nc group!")
    settle(controller.ops)
    paths.append(grab(form, out / "form_validation.png"))
    form.close()

    window.show_page("agents")
    secret = OneTimeSecretDialog(
        "Enrollment passphrase for t10k-dal-02",
        "Agent <b>t10k-dal-02</b> enrols once with this passphrase, then holds a certificate.",
        "K7QX-M2PD-9WTR-4HZA",
        window.page("agents"),
    )
    secret.show()
    paths.append(grab(secret, out / "enrollment_passphrase.png"))
    secret.close()
    return paths


def render_reports(window, controller, out, grab, settle) -> list[Path]:
    """File > Signed reports…, with this KMA's schedule under the chosen report."""
    reports = window.open_reports()
    reports.choice.setCurrentRow(3)  # the quorum operations of a period
    settle(controller.ops)
    path = grab(reports, out / "signed_reports.png")
    reports.close()
    return [path]


def render_destroyed_key(window, controller, out, grab, settle) -> list[Path]:
    """A key destroyed after the demo's first backup took it: its destruction waits for that backup."""
    from ui.lists.details import DetailsDialog
    from ui.pages.keys import LABELS, destruction_texts

    destroyed = controller.session.client.list_keys(state="destroyed").items
    if not destroyed:
        return []
    key = controller.session.client.get_key(destroyed[0].id)
    dialog = DetailsDialog(f"Key {key.id}", key, window, labels=LABELS, texts=destruction_texts(key))
    dialog.show()
    settle(controller.ops)
    path = grab(dialog, out / "key_details_destroyed.png")
    dialog.close()
    return [path]


def render_planning(out, grab) -> list[Path]:
    """The Planning window as the sign-in window opens it (no KMA needed): a slow backup's data path
    to its bottleneck (an LTO-8 behind Gigabit Ethernet, measured at 30 MB/s), then the drive
    settings of HP LTO4s, one chart per buffer size. (The main window's Planning page is above.)"""
    from tape_planning.path import PathRequest
    from ui.planning.area import PlanningWindow

    window = PlanningWindow()
    window.resize(1280, 860)
    area = window.area
    area.data.setText("50TB")
    area.window_edit.setText("10h")
    area.path_inputs.set_request(
        PathRequest(drive="LTO8", network="gige", disk="array", disk_mb_s="500", measured_mb_s="30")
    )
    area.drive.setCurrentIndex(area.drive.findData("LTO4"))
    area.ratio.setEditText("2:1")
    area.file_size.setEditText("1GB")
    window.show()
    paths = [grab(window, out / "planning_window.png")]
    area.tabs.setCurrentIndex(1)
    paths.append(grab(window, out / "planning_drive_settings.png"))
    window.close()
    return paths


if __name__ == "__main__":
    sys.exit(main())
