"""Tests of placement.profiles."""
