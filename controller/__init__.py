"""The control plane: P4Runtime clients that push pipelines, routes, multicast groups and jobs."""
