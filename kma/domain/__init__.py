"""Domain rules that need no store: roles, validation, key and data unit lifecycles."""
