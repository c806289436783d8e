"""Help > User guide: the product's concepts and what each role does, in a few screens."""

from __future__ import annotations

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTextBrowser, QVBoxLayout, QWidget

from app.assets import get_asset


class UserGuide(QDialog):
    """A non-modal window, so the guide can stay open beside the main window."""

    _open: UserGuide | None = None

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("userGuide")
        self.setWindowTitle("KMS Manager user guide")
        self.resize(720, 680)
        layout = QVBoxLayout(self)
        self.browser = QTextBrowser()
        self.browser.setOpenExternalLinks(True)
        self.browser.setHtml(get_asset("guide/user-guide.html").read_text(encoding="utf-8"))
        layout.addWidget(self.browser, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        layout.addWidget(buttons)

    @classmethod
    def show_for(cls, parent: QWidget) -> UserGuide:
        if cls._open is None or cls._open.parent() is not parent:
            cls._open = cls(parent)
        cls._open.show()
        cls._open.raise_()
        return cls._open
