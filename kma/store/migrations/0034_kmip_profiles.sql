-- KMIP profiles (issue 27): attributes a client sets are kept as it sent them.
-- key_custom_attributes holds, besides the client's own x- attributes, the standard attributes a
-- client may set (Name when it is not the key's data unit, Alternative Name, Application Specific
-- Information, Contact Information). `value` is their text (what the manager shows and Locate
-- compares for text); `item` is the TTLV encoding of an Attribute Value that is not a text string
-- (an Integer or Date-Time custom attribute, a Name or Application Specific Information
-- structure), NULL for text.
ALTER TABLE key_custom_attributes ADD COLUMN item BLOB;

-- When an agent last changed a key's attributes (KMIP Last Change Date is the latest of this and
-- the key's own times), and the Compromise Occurrence Date a Revoke named.
ALTER TABLE key_kmip ADD COLUMN changed_at INTEGER;
ALTER TABLE key_kmip ADD COLUMN compromise_occurrence_at INTEGER;
