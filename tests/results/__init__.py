"""Tests of placement.results."""
