"""The scenario: its sections, workload classes, the build-out horizon and loading a scenario file."""
