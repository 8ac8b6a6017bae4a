"""Serving physics per node: hardware and model catalogs, decode and prefill, KV cache, queueing."""
