"""Alerts that leave the building: what one alert says, and the three ways it travels (SNMPv3
notifications, signed webhooks, e-mail over STARTTLS). No store, no worker here: the channels'
settings and the sender are kma/services/alert_channels.py and kma/services/alerts.py
(docs/alerts.md)."""
