"""A KMA as one node of a cluster: its rqlite node's configuration and process, conversion of an
embedded store into the first node."""
