"""The KMS manager's composition root: the one package above `ui/`. `main.py` starts the desktop
application (`kms-manager`), `controller.py` wires its windows together (sign-in, main window,
sign-out), `screenshots.py` renders them headless. Everything below knows only what it is given:
`ui/` the widgets, `app/` what is not a widget, `kms_client/` the KMA's API.
"""
