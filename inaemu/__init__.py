"""inaemu: an in-network aggregation emulator built on a BMv2-compatible P4 software switch."""

__version__ = "0.1.0"
