"""Dialogs the manager opens from anywhere: forms, secrets, trust, two-step sign-in, about."""
