"""Topology descriptions shared by Mininet, the simulator and the controller."""
