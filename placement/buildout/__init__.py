"""Multi-year build-out under uncertain demand, across accelerator generations."""
