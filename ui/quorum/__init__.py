"""Quorum in the manager: the pending approvals inbox (``pending``), lock and unlock with the key
split and autonomous unlock (``locking``), the key split change and member enrolment dialogs
(``key_split``), the dialogs and widgets they share (``widgets``) and the window-wide badge,
notifications and locked banner (``window``). Each page module registers its page on import."""
