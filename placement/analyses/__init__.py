"""Questions asked of a scenario or a plan: arrangement, baselines, compare, diff, discover, explain, frontier, tail.

Also the price of a rule and the check that a scenario is valid.
"""
