"""Tests of placement.plan."""
