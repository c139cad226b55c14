"""Differential tests against the reference toolchain (real p4c and simple_switch)."""
