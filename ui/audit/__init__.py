"""The auditor's view in the manager: the audit browser, histories with a drawn timeline, chain
verification, signed exports (registered by ``ui.audit.pages``) and the dashboard's charts (shown by
``ui.pages.dashboard``)."""
