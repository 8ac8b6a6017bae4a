"""Solving an instance into a plan: the pipeline, the Plan record, its tables, summary and notes, failover."""
