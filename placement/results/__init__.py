"""Typed results of a plan (the summary, class summaries) and the one results-folder reader and writer."""
