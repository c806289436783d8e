"""The KMS manager desktop application: start-up, sessions, background operations.

Layering: ``ui -> app -> kms_client``. Nothing here imports ``kma``; the bundled local KMA is a
separate process started through ``python -m kma``.
"""
