"""Host agents: quantization, the sans-I/O aggregation protocol, baselines, socket drivers."""
