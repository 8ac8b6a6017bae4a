"""Per-class node physics for a scenario: KV cache tiers, prefix-cache hits, the TTFT budget and goodput."""
