"""Keys as an encryption agent sees and changes them: the store side of the KMIP service.

An agent sees the keys of the key groups it may use (`key_group_agents`, each row's MAC verified:
kma/services/integrity/row_macs.py) and nothing else. Every statement that changes a key checks again, inside
the SQL, that the agent is enabled and may use the key's group (and, for revoke and destroy, that
the group's policy lets agents revoke), so a permission withdrawn a moment ago holds even for a
request already in flight. The functions here only read or build statements; the caller commits
them with their audit event.

- `key_access`: which keys an agent sees, and reading one (`visible_key`, `current_write_key`);
- `key_lifecycle`: a key given to an agent's group, activated, revoked, destroyed, bound to a tape;
- `key_attributes`: the attributes a client keeps on a key (`x-...`, Name, Contact Information);
- `key_locate`: KMIP Locate's search;
- `key_undo`: putting back what an Undo batch wrote (kma/kmip/undo.py).
"""
