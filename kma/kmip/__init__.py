"""The KMA's service listener: KMIP 1.0-1.4 and 2.0 over mutual TLS for encryption agents.

`ttlv` is the wire codec, `messages` the request/response envelopes, `operations` the dispatch
table from operation to handler (`ops_*` modules; `v2` translates KMIP 2.0's attribute encoding
to 1.4's and back), `server` the asyncio TLS listener, which also
answers agent enrollment (`enrollment_http`) on the same port. The values of the protocol's
enumerations live in `enums`, so the KMA does not depend on PyKMIP at run time.
"""
