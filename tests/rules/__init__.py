"""Tests of placement.rules."""
