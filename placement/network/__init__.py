"""Round trips: the great-circle model, the latency graph of metros and long-haul links, place names."""
