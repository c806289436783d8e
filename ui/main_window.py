"""The main window: navigation on the left, the chosen area on the right, banners on top.

It knows nothing about any area: it lists the registered pages the signed-in user may see
(:mod:`app.pages`), builds each one the first time it is opened, and asks the current page to
``refresh()`` after a reconnect or a renewed sign-in. Geometry, splitter and last page are kept in
``QSettings``.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QSettings, QSize, Qt, Signal
from PySide6.QtGui import QAction, QCloseEvent, QIcon, QKeySequence
from PySide6.QtWidgets import (
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QSplitter,
    QStackedWidget,
    QStyle,
    QVBoxLayout,
    QWidget,
)

from app.assets import get_asset
from app.context import AppContext
from app.pages import PageSpec, pages_for
from app.session.session import ConnectionState
from ui.banners import LocalModeBanner, ReconnectBanner
from ui.format import words

CHANGE_MESSAGE_MS = 8000  # how long "Key k1 destroyed." stays in the status bar


class MainWindow(QMainWindow):
    sign_out_requested = Signal()
    sign_in_as_requested = Signal(str)  # a demo user's ID (local mode)
    reauth_requested = Signal()

    def __init__(self, ctx: AppContext, local_note: str = "", remember: bool = True) -> None:
        super().__init__()
        self.ctx = ctx
        self.remember = remember  # False: layout and last page are not saved (headless renders)
        self.setObjectName("mainWindow")
        self.setWindowTitle("KMS Manager")
        self.setWindowIcon(QIcon(str(get_asset("icons/app.svg"))))
        self.specs: list[PageSpec] = []
        self.pages: dict[str, QWidget] = {}
        self._slots: dict[str, QWidget] = {}

        central = QWidget()
        layout = QVBoxLayout(central)
        layout.setContentsMargins(8, 8, 8, 0)
        self.reconnect_banner = ReconnectBanner(ctx.session, self)
        layout.addWidget(self.reconnect_banner)
        self.local_banner = LocalModeBanner(local_note, self)
        self.local_banner.setVisible(bool(local_note))
        layout.addWidget(self.local_banner)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.nav = QListWidget()
        self.nav.setObjectName("navigation")
        self.nav.setAccessibleName("Areas")
        self.nav.setIconSize(QSize(18, 18))
        self.nav.setSpacing(1)
        self.nav.setMinimumWidth(200)  # "Pending approvals (12)" in bold, with its icon, fits
        self.nav.setMaximumWidth(260)
        self.nav.currentRowChanged.connect(self._nav_changed)
        self.stack = QStackedWidget()
        self.splitter.addWidget(self.nav)
        self.splitter.addWidget(self.stack)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([200, 1080])
        layout.addWidget(self.splitter, 1)
        self.setCentralWidget(central)

        self.user_label = QLabel()
        self.busy_label = QLabel()
        self.statusBar().addWidget(self.user_label, 1)
        self.statusBar().addPermanentWidget(self.busy_label)
        ctx.ops.busy_changed.connect(self._busy)
        ctx.ops.changed.connect(self._changed)  # a method: dropped with the window
        ctx.session.user_changed.connect(self._user_text)  # a method: dropped with the window
        ctx.session.reconnected.connect(self.refresh_current)
        ctx.session.state_changed.connect(self._state)
        ctx.session.failed_over.connect(self._failed_over)

        self._build_menus()
        self.rebuild_pages()
        self._restore()

    # -- pages --------------------------------------------------------------------------------
    def rebuild_pages(self) -> None:
        """Show the areas the signed-in user may read."""
        self.specs = pages_for(self.ctx.may)
        self.nav.blockSignals(True)
        self.nav.clear()
        for old in list(self._slots.values()):
            self.stack.removeWidget(old)
        self._slots.clear()
        for spec in self.specs:
            item = QListWidgetItem(spec.title)
            item.setData(Qt.ItemDataRole.UserRole, spec.key)
            item.setToolTip(spec.description or spec.title)
            item.setIcon(self._icon(spec))
            self.nav.addItem(item)
            slot = self.pages.get(spec.key) or QWidget()
            self._slots[spec.key] = slot
            self.stack.addWidget(slot)
        self.nav.blockSignals(False)
        self._rebuild_go_menu()
        self._user_text()

    def _icon(self, spec: PageSpec) -> QIcon:
        """``resources/icons/pages/<key>.svg`` if bundled, else a named QStyle icon."""
        try:
            return QIcon(str(get_asset(f"icons/pages/{spec.key}.svg")))
        except FileNotFoundError:
            if spec.icon and hasattr(QStyle.StandardPixmap, spec.icon):
                return self.style().standardIcon(getattr(QStyle.StandardPixmap, spec.icon))
        return QIcon()

    def visible_page_keys(self) -> list[str]:
        return [s.key for s in self.specs]

    def current_key(self) -> str | None:
        item = self.nav.currentItem()
        return item.data(Qt.ItemDataRole.UserRole) if item else None

    def show_page(self, key: str) -> QWidget | None:
        for row, spec in enumerate(self.specs):
            if spec.key == key:
                self.nav.setCurrentRow(row)
                return self.pages.get(key)
        return None

    def _nav_changed(self, row: int) -> None:
        if not 0 <= row < len(self.specs):
            return
        spec = self.specs[row]
        page = self.pages.get(spec.key)
        if page is None:
            page = spec.factory(self.ctx)
            page.setAccessibleName(spec.title)
            self.pages[spec.key] = page
            old = self._slots[spec.key]
            index = self.stack.indexOf(old)
            self.stack.insertWidget(index, page)
            self.stack.removeWidget(old)
            old.deleteLater()
            self._slots[spec.key] = page
        self.stack.setCurrentWidget(page)
        self.setWindowTitle(f"{spec.title} — KMS Manager")
        if self.remember:
            QSettings().setValue("main/page", spec.key)

    def current_page(self) -> QWidget | None:
        key = self.current_key()
        return self.pages.get(key) if key else None

    def _changed(self, change: Any) -> None:
        """A write worked: say so in the status bar (the pages that show it read again)."""
        if change.message:
            self.statusBar().showMessage(change.message, CHANGE_MESSAGE_MS)

    def refresh_current(self) -> None:
        page = self.current_page()
        if page is not None and hasattr(page, "refresh"):
            page.refresh()

    def open_second_factor(self) -> Any:
        from ui.dialogs.second_factor_dialog import SecondFactorDialog

        dialog = SecondFactorDialog(self.ctx, self)
        dialog.open()
        return dialog

    def open_reports(self) -> Any:
        from ui.reports.reports_dialog import ReportsDialog

        dialog = ReportsDialog(self.ctx, self)
        dialog.open()
        return dialog

    # -- menus --------------------------------------------------------------------------------
    def _build_menus(self) -> None:
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        sign_out = QAction("Sign &out", self)
        sign_out.setShortcut(QKeySequence("Ctrl+Shift+L"))
        sign_out.triggered.connect(self.sign_out_requested)
        file_menu.addAction(sign_out)
        if self.ctx.offers("users.second-factor"):
            two_step = QAction("&Two-step sign-in…", self)
            two_step.triggered.connect(self.open_second_factor)
            file_menu.addAction(two_step)
        if self.ctx.may("audit.read") and self.ctx.offers("reports.compliance"):
            reports = QAction("Signed &reports…", self)
            reports.triggered.connect(self.open_reports)
            file_menu.addAction(reports)
        file_menu.addSeparator()
        quit_action = QAction("&Quit", self)
        quit_action.setShortcut(QKeySequence.StandardKey.Quit)
        quit_action.setMenuRole(QAction.MenuRole.QuitRole)
        quit_action.triggered.connect(self.close)
        file_menu.addAction(quit_action)

        view = bar.addMenu("&View")
        refresh = QAction("&Refresh", self)
        refresh.setShortcuts([QKeySequence(QKeySequence.StandardKey.Refresh), QKeySequence("Ctrl+R")])
        refresh.triggered.connect(self.refresh_current)
        view.addAction(refresh)
        nav_focus = QAction("Go to &navigation", self)
        nav_focus.setShortcut(QKeySequence("Ctrl+L"))
        nav_focus.triggered.connect(lambda: self.nav.setFocus(Qt.FocusReason.ShortcutFocusReason))
        view.addAction(nav_focus)
        full = QAction("&Full screen", self)
        full.setShortcut(QKeySequence.StandardKey.FullScreen)
        full.setCheckable(True)
        full.toggled.connect(lambda on: self.showFullScreen() if on else self.showNormal())
        view.addAction(full)
        self.go_menu = bar.addMenu("&Go")

        help_menu = bar.addMenu("&Help")
        guide = QAction("&User guide", self)
        guide.setShortcut(QKeySequence.StandardKey.HelpContents)
        guide.triggered.connect(self._user_guide)
        help_menu.addAction(guide)
        if self.ctx.demo is not None:
            demo = QAction("&Demo credentials…", self)
            demo.triggered.connect(self.show_demo_credentials)
            help_menu.addAction(demo)
        help_menu.addSeparator()
        about = QAction("&About KMS Manager", self)
        about.setMenuRole(QAction.MenuRole.AboutRole)
        about.triggered.connect(self._about)
        help_menu.addAction(about)

    def _rebuild_go_menu(self) -> None:
        self.go_menu.clear()
        numbered = [spec for spec in self.specs if spec.key != "settings"]
        taken = {"L"}  # Ctrl+Shift+L signs out
        for spec in self.specs:
            action = self.go_menu.addAction(spec.title)
            if spec.key == "settings":
                action.setShortcut(QKeySequence("Ctrl+,"))
            elif (i := numbered.index(spec)) < 10:  # Ctrl+1 ... Ctrl+9, then Ctrl+0
                action.setShortcut(QKeySequence(f"Ctrl+{(i + 1) % 10}"))
            else:  # beyond ten areas: Ctrl+Shift+ a free letter of the title (Audit log: A)
                letter = next((c for c in spec.title.upper() if c.isalpha() and c not in taken), "")
                if letter:
                    taken.add(letter)
                    action.setShortcut(QKeySequence(f"Ctrl+Shift+{letter}"))
            action.triggered.connect(lambda _c=False, k=spec.key: self.show_page(k))

    def _user_guide(self) -> None:
        from ui.user_guide import UserGuide

        UserGuide.show_for(self)

    def show_demo_credentials(self) -> Any:
        from ui.dialogs.demo_credentials_dialog import DemoCredentialsDialog

        dialog = DemoCredentialsDialog(self.ctx.demo, self.ctx.session.user, self)
        dialog.sign_in_as.connect(self.sign_in_as_requested)
        dialog.open()
        return dialog

    def _about(self) -> Any:
        from ui.dialogs.about_dialog import AboutDialog

        dialog = AboutDialog(self.ctx, self)
        dialog.open()
        return dialog

    # -- status -------------------------------------------------------------------------------
    def _user_text(self, *_user: Any) -> None:
        user = self.ctx.session.user
        client = self.ctx.session.client
        if user is None:
            self.user_label.setText("Not signed in")
            return
        roles = ", ".join(words(r) for r in user.roles)
        self.user_label.setText(f"{user.name} ({user.id}) · {roles} · {client.address if client else ''}")

    def _busy(self, count: int) -> None:
        self.busy_label.setText("Working…" if count else "")

    def _state(self, state: ConnectionState) -> None:
        if state is ConnectionState.RECONNECTING:
            self.statusBar().showMessage("Connection lost — reconnecting…")
        elif state is ConnectionState.CONNECTED:
            self.statusBar().clearMessage()

    def _failed_over(self, failover: Any) -> None:
        """Said plainly, and kept until the next status message: where the manager is now."""
        self.statusBar().showMessage(failover.message)
        self._user_text()

    # -- persistence --------------------------------------------------------------------------
    def _restore(self) -> None:
        s = QSettings()
        geometry = s.value("main/geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        else:
            self.resize(1280, 800)
        splitter = s.value("main/splitter")
        if splitter is not None:
            self.splitter.restoreState(splitter)
        last = str(s.value("main/page", "dashboard"))
        if not self.show_page(last) and self.specs:
            self.nav.setCurrentRow(0)

    def save_state(self) -> None:
        if not self.remember:
            return
        s = QSettings()
        s.setValue("main/geometry", self.saveGeometry())
        s.setValue("main/splitter", self.splitter.saveState())
        for page in self.pages.values():
            if hasattr(page, "save_state"):
                page.save_state()

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802
        self.save_state()
        super().closeEvent(event)

    def page(self, key: str) -> Any:
        return self.pages.get(key)
