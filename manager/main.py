"""``kms-manager``: the desktop KMS manager's entry point."""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from kms_client.release import release

if TYPE_CHECKING:
    from PySide6.QtCore import QObject


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="kms-manager",
        description="Manage a cluster of Key Management Appliances for encrypting tape drives.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {release()}")
    parser.add_argument(
        "--local", action="store_true", help="run the bundled demo KMA on this computer and sign in to it"
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        help="local mode: where the local KMA keeps its data (default: the user data folder)",
    )
    parser.add_argument(
        "--screenshots",
        type=Path,
        metavar="DIR",
        help="render every page into DIR and exit: of the local KMA (automatic "
        "with --local when there is no display), or of the KMA given by "
        "--kma, signed in as --user",
    )
    remote = parser.add_argument_group("screenshots of a KMA you sign in to (no window opens)")
    remote.add_argument("--kma", metavar="HOST:PORT", help="the KMA's management address")
    remote.add_argument(
        "--ca-fingerprint",
        metavar="SHA256:...",
        help="its cluster CA's fingerprint (as `kma serve` prints it), pinned",
    )
    remote.add_argument("--user", metavar="ID", help="the user to sign in as")
    remote.add_argument(
        "--passphrase-file",
        type=Path,
        metavar="FILE",
        help="a file holding that user's passphrase (never given on the command line)",
    )
    args = parser.parse_args(argv)
    remote_given = [args.kma, args.ca_fingerprint, args.user, args.passphrase_file]
    if any(remote_given) and (args.local or args.screenshots is None or not all(remote_given)):
        parser.error(
            "screenshots of a KMA need --screenshots DIR with --kma, --ca-fingerprint, --user "
            "and --passphrase-file (and not --local)"
        )
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if importlib.util.find_spec("PySide6") is None:  # a server-only install: `pip install .`
        sys.stderr.write("kms-manager: the desktop manager needs Qt: pip install 'kms-manager[gui]'\n")
        return 2
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    from app.local.local_kma import has_display

    headless = args.kma is not None or (args.local and (args.screenshots is not None or not has_display()))
    if headless and not os.environ.get("QT_QPA_PLATFORM"):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"

    from PySide6.QtGui import QIcon
    from PySide6.QtWidgets import QApplication

    from app.assets import get_asset
    from app.theme import apply_theme
    from manager.controller import AppController

    running = QApplication.instance()
    app = running if isinstance(running, QApplication) else QApplication(sys.argv[:1])
    app.setOrganizationName("KMS")
    app.setOrganizationDomain("kms.example")
    app.setApplicationName("kms-manager")
    app.setApplicationDisplayName("KMS Manager")
    app.setDesktopFileName("kms-manager")
    app.setWindowIcon(QIcon(str(get_asset("icons/app.svg"))))
    apply_theme()
    controller = AppController(app)

    if args.kma is not None:
        return _render_kma(controller, args)
    if args.local:
        from app.local.local_mode import LocalMode

        local = LocalMode(controller, args.data_dir)
        if headless:
            if args.screenshots is None:
                sys.stderr.write("No display found: rendering the pages to PNG files instead.\n")
            from manager.screenshots import render_local

            return render_local(local, args.screenshots)
        local.start()
    else:
        controller.show_sign_in()
    _quit_on_signals(app)
    return app.exec()


def _render_kma(controller: object, args: argparse.Namespace) -> int:
    """Sign in to the KMA at ``--kma`` (its CA pinned) and render its pages; print their paths."""
    from app.session.profiles import ConnectionProfile
    from manager.screenshots import render_signed_in

    try:
        passphrase = args.passphrase_file.read_text(encoding="utf-8").rstrip("\r\n")  # the line, as typed
    except OSError as exc:
        sys.stderr.write(f"kms-manager: cannot read the passphrase file: {exc}\n")
        return 2
    profile = ConnectionProfile(args.kma, args.kma, args.user, args.ca_fingerprint)
    try:
        paths = render_signed_in(controller, profile, passphrase, args.screenshots)
    except Exception as exc:  # noqa: BLE001 - one line for the user, not a traceback
        sys.stderr.write(f"kms-manager: {exc}\n")
        return 1
    for path in paths:
        print(path)  # noqa: T201 - the command's documented output
    return 0


def _quit_on_signals(app: QObject) -> None:
    """Ctrl-C or SIGTERM quits through Qt, so aboutToQuit runs (local mode stops its KMA).

    Python runs signal handlers only between bytecodes, so a timer wakes the interpreter while
    Qt's event loop is idle.
    """
    import signal

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    # Both exist on Windows too (signal.signal accepts them); SIGTERM only ever arrives on Linux and
    # macOS, where it is how a session or service manager asks a program to quit.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: QApplication.quit())
    timer = QTimer(app)
    timer.timeout.connect(lambda: None)
    timer.start(250)


if __name__ == "__main__":
    sys.exit(main())
