"""Trace replay for entry caches: the ``cache-trace`` simulator replays a standard cache trace
(libCacheSim's oracleGeneral binary, or a CSV of ``time,object,size``) straight through a
profile's entry cache, so broker caches compare with generic cache policies on public traces.

Registered through ``brokerlab_plugins.cache_trace.plugin``; the format and semantics are in
``docs/workloads.md`` ("Replaying cache traces").
"""
