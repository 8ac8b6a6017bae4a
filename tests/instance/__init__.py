"""Tests of placement.instance."""
