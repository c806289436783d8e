-- Keys whose material an agent supplied (KMIP Register), as opposed to keys this cluster made.
-- Such a key serves another agent's writes only where its key group's policy allows import:
-- see kma/services/agent_keys.py (TRUSTED). Keys registered before this column existed are
-- found by their audit events.
ALTER TABLE keys ADD COLUMN registered_by TEXT;
UPDATE keys SET registered_by = coalesce(agent_id, '')
    WHERE id IN (SELECT subject_id FROM audit_events WHERE operation = 'kmip.register'
                 AND condition = 'success' AND subject_type = 'key');
