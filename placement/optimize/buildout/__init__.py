"""The multi-year, two-stage build-out LP/MILP on arrays: its input and solution arrays, the model, its solve."""
