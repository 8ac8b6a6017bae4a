"""Tests of placement.economics."""
