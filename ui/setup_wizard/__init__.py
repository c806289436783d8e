"""The set-up wizard ("Set up a new KMA…" on the sign-in window) and the key split cards.

wizard.py        the QWizard: the pages in order, the answers they share, signing in at the end
base.py          a page whose Next first asks the KMA, showing the reason on the page if it says no
connect_pages.py connect (address, fingerprint, set-up code), network, what the KMA will do
key_split_pages.py  N and M with a picture, each member's own passphrase, the proof
settings_pages.py   the initial Security Officer, autonomous unlock, key pool size
finish_pages.py  summary (save the answers), progress, done
widgets.py       the M-of-N picture and the passphrase strength meter
cards.py         the key split cards: a printable PDF, one page per member
"""
