"""Wires the windows together: sign-in -> main window -> (expired) sign-in again -> sign-out.

This is the composition root, so it is the one place in ``app`` that builds ``ui`` windows; the
windows themselves only know the context they are given.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QApplication, QDialog

from app.context import AppContext
from app.operations import Operations
from app.pages import window_extensions
from app.session import secrets
from app.session.profiles import ConnectionProfile
from app.session.session import SessionController
from app.session.sign_in import SignedIn
from kms_client import Failover

log = logging.getLogger(__name__)


class AppController(QObject):
    def __init__(self, app: QApplication) -> None:
        super().__init__(app)
        import ui.pages

        ui.pages.load_all()
        self.app = app
        self.ops = Operations(self)
        self.session = SessionController(self.ops, self)
        self.ctx = AppContext(self.ops, self.session)
        self.window: Any = None
        self.sign_in_window: Any = None
        self.reauth_window: Any = None
        self.presenter: Any = None
        self.enrolment: Any = None  # the two-step sign-in set-up a role requires, while it is open
        self.local_note = ""
        self.demo: Any = None  # DemoCredentials in local mode: Help > Demo credentials, "sign in as"
        self.local_ca = ""  # local mode's KMA's CA fingerprint: the banner and demo are about it only
        self.local_kma: Any = None  # local mode's LocalKma: stopped when the application quits
        self.remember_layout = True  # False when rendering headless: the next real window is untouched
        self.quit_when_sign_in_closes = True
        self.session.session_expired.connect(self._reauth)
        self.session.cluster_learnt.connect(self._save_cluster)
        app.aboutToQuit.connect(self.shutdown)

    # -- sign-in ------------------------------------------------------------------------------
    def show_sign_in(
        self, profile: ConnectionProfile | None = None, message: str = "", try_remembered: bool = True
    ) -> Any:
        from ui.sign_in_window import SignInWindow

        window = SignInWindow(self.ops, reauth_profile=profile, message=message)
        window.signed_in.connect(self.signed_in)
        window.rejected.connect(self._sign_in_closed)
        self.sign_in_window = window
        window.show()
        if try_remembered:
            window.try_remembered()
        return window

    def _sign_in_closed(self) -> None:
        # A window opened from the sign-in (Planning) stays; Qt quits when it closes.
        others = any(w.isVisible() for w in QApplication.topLevelWidgets())
        if self.window is None and self.quit_when_sign_in_closes and not others:
            self.app.quit()

    def signed_in(self, signed: SignedIn, profile: ConnectionProfile) -> Any:
        self.session.start(signed.client, signed.user, profile, signed.about)
        if self.sign_in_window is not None:
            self.sign_in_window.signed_in.disconnect(self.signed_in)
            self.sign_in_window.rejected.disconnect(self._sign_in_closed)
            self.sign_in_window.close()
            self.sign_in_window = None
        if signed.user.second_factor_required and not signed.user.second_factor:
            return self._enrol_first(signed, profile)
        return self._open_main_window(signed, profile)

    def _enrol_first(self, signed: SignedIn, profile: ConnectionProfile) -> Any:
        """The user's role requires two-step sign-in and they have none: the KMA refuses them all
        else, so they set it up before the main window opens, or sign out."""
        from ui.dialogs.second_factor_dialog import SecondFactorDialog

        dialog = SecondFactorDialog(self.ctx, required=True)
        self.enrolment = dialog

        def finished(result: int) -> None:
            self.enrolment = None
            if result == QDialog.DialogCode.Accepted:
                enrolled = replace(signed, user=replace(signed.user, second_factor=True))
                self.session.resume(enrolled.user)
                self._open_main_window(enrolled, profile)
            else:
                self.sign_out()

        dialog.finished.connect(finished)
        dialog.show()
        return dialog

    def _open_main_window(self, signed: SignedIn, profile: ConnectionProfile) -> Any:
        from ui.main_window import MainWindow
        from ui.messages import ErrorPresenter

        # Local mode's banner and demo credentials belong to its KMA, not to one signed in later.
        local = bool(self.local_ca) and profile.ca_fingerprint == self.local_ca
        self.ctx.demo = self.demo if local else None
        self.window = MainWindow(self.ctx, self.local_note if local else "", remember=self.remember_layout)
        self.presenter = ErrorPresenter(self.session, self.window)
        self.ops.error_handler = self.presenter
        self.window.sign_out_requested.connect(self.sign_out)
        self.window.sign_in_as_requested.connect(self.sign_in_as)
        for extend in window_extensions():  # badges, banners, polls added by areas
            extend(self.window, self.ctx)
        self.window.show()
        if signed.client.address != profile.address:  # the profile's KMA did not answer: another did
            gone = next((k.name for k in profile.kmas if k.address == profile.address), profile.address)
            now = next((k for k in profile.kmas if k.address == signed.client.address), None)
            if now is not None:
                self.window.statusBar().showMessage(Failover(gone, now).message)
        log.info("signed in as %s to %s", signed.user.id, signed.client.address)
        return self.window

    def _save_cluster(self, kmas: Any) -> None:
        """The cluster's KMAs go with the saved profile, for the next sign-in's failover."""
        from app.session.profiles import ProfileStore

        profile = self.session.profile
        store = ProfileStore()
        saved = store.get(profile.name) if profile is not None else None
        if saved is not None:
            saved.kmas = list(kmas)
            store.save(saved)

    # -- expired session ----------------------------------------------------------------------
    def _reauth(self) -> None:
        from ui.sign_in_window import SignInWindow

        if self.window is None or self.reauth_window is not None or self.session.client is None:
            return
        client = self.session.client
        profile = self.session.profile
        window = SignInWindow(
            self.ops,
            self.window,
            reauth_client=client,
            # the KMA the client talks to now (another one, after a failover)
            reauth_profile=replace(profile, address=client.address) if profile else None,
            message="Your session has ended. Enter your passphrase to carry on where you were.",
        )
        window.signed_in.connect(lambda s, _p: self.session.resume(s.user))
        window.finished.connect(self._reauth_finished)
        self.reauth_window = window
        window.open()

    def _reauth_finished(self, result: int) -> None:
        self.reauth_window = None
        if result != QDialog.DialogCode.Accepted:
            self.sign_out()

    # -- sign-out and exit --------------------------------------------------------------------
    def sign_out(self) -> None:
        profile = self.session.profile
        demo = self.ctx.demo  # local mode's demo: the sign-in window still leads to its credentials
        self._end_session()
        window = self.show_sign_in(profile, "Signed out.", try_remembered=False)
        if demo is not None:
            window.offer_demo(demo)

    def _end_session(self) -> None:
        profile = self.session.profile
        if profile is not None and self.session.user is not None:
            secrets.forget(secrets.token_account(profile.key, self.session.user.id))
        self.session.sign_out()
        if self.window is not None:
            self.window.save_state()
            self.window.hide()
            self.window.deleteLater()
            self.window = None
        self.ops.error_handler = None

    def sign_in_as(self, user_id: str) -> None:
        """Local mode: sign out and sign in again as another demo user (Help > Demo credentials)."""
        from app.session.sign_in import sign_in

        passphrase = self.demo.passphrase_of(user_id) if self.demo is not None else None
        profile = self.session.profile
        if not passphrase or profile is None:
            return
        profile = replace(profile, user_id=user_id)
        parent = self.window
        self.ops.write(
            lambda _worker: sign_in(profile, passphrase),
            parent=parent,
            label=f"Signing in as {user_id}…",
            success=lambda signed: self._switched(signed, profile),
        )

    def _switched(self, signed: SignedIn, profile: ConnectionProfile) -> None:
        # Help > Demo credentials stays open across "Sign in as": trying six roles is six clicks.
        demo_open = self.window is not None and any(
            d.isVisible() for d in self.window.findChildren(QDialog, "demoCredentials")
        )
        self._end_session()
        window = self.signed_in(signed, profile)
        if demo_open:
            window.show_demo_credentials()

    def shutdown(self) -> None:
        """Quit promptly: save the layout, let a change in flight finish, then close the client
        (reads still running end with it: their answers are no longer wanted, and an open
        keep-alive connection would hold a local KMA's shutdown for its graceful timeout), and
        stop the local KMA."""
        if self.window is not None:
            self.window.save_state()
        if self.local_kma is not None:
            self.local_kma.stop_making_demo()  # a start-up still making the demo ends now
        self.ops.wait_writes(3000)
        if self.session.client is not None:
            self.session.client.close()
        if self.local_kma is not None:
            self.local_kma.stop(timeout=0.5, kill=False)
        self.ops.wait_idle(500)
