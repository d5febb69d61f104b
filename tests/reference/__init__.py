"""Slow, dense O(N^3) reference implementations that the fast code is checked against."""
