"""The optimisation core on plain arrays: PuLP formulation, the placement MILP, solvers, checks.

Nothing here knows about files, geometry or scenarios; it is tested against brute force and
optima worked out by hand.
"""
