"""The optimisation core on plain arrays: one linear model and its exporters, the placement rows, solvers, checks.

Every LP and MILP is a :class:`placement.optimize.linear.LinearModel` built from the row blocks of
:mod:`placement.optimize.rows`, written out to PuLP or HiGHS. Nothing here knows about files, geometry
or scenarios; it is tested against brute force and optima worked out by hand.
"""
