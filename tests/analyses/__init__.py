"""Tests of placement.analyses."""
