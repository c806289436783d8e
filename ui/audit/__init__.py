"""The auditor's view in the manager: the audit browser, histories with a drawn timeline, chain
verification, signed exports and the dashboard's charts. Registered by ``ui.audit.pages``."""
