"""Bundled assets (icons, style sheets); load them with ``app.assets.get_asset``."""
