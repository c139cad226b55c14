"""`inaemu train`: a real (small) training run whose gradients cross the emulated network.

`hook.py` is the PyTorch DDP communication hook (any `hosts.api.Allreducer`: INA through the
switch, or a host algorithm); `task.py` the data and model; `worker.py` one worker process on a
Mininet host; `sim_train.py` simulated workers over `inaemu.sim`; docs/train.md.
"""
