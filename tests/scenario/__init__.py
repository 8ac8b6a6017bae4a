"""Tests of placement.scenario."""
