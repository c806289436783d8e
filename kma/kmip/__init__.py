"""The KMA's service listener: KMIP 1.0-1.4, 2.0 and 2.1 over mutual TLS for encryption agents.

`ttlv` is the wire codec, `messages` the request/response envelopes, `operations` the dispatch
table from operation to handler (`ops_*` modules; `v2` translates KMIP 2.x's attribute encoding
to 1.4's and back; `objects` says what a managed object is: an AES key, Secret Data or an Opaque
Object), `server` the asyncio TLS listener, which also
answers agent enrollment (`enrollment_http`) on the same port. The values of the protocol's
enumerations live in `enums`, so the KMA does not depend on PyKMIP at run time.
"""
