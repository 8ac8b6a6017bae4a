"""The edge from a scenario to arrays: the instance record, its loading, latency, prices, commodities and rows."""
