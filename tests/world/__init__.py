"""Tests of placement.world."""
