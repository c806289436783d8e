-- The keys' kept KMIP attributes by name and value (issue 33): a Locate by Name (how a tape
-- library finds the keys of a tape) or by a client's x- attribute reads the keys that have it
-- through this index (kma/services/agent_keys.py `locate`), not every key of the agent's groups.
CREATE INDEX key_custom_attributes_by_value ON key_custom_attributes (name, value);
