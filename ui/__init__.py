"""Views of the KMS manager: windows, dialogs, pages and table models."""
