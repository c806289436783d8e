"""The Planning area: plan an encrypted tape deployment from the white paper's measurements.

It needs no KMA and no sign-in: the engine is :mod:`tape_planning` (no Qt, shared with
``kma plan``), so the same area opens from the sign-in window and from the main window.
"""
