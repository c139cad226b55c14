"""`inaemu train`: a real (small) training run whose gradients cross the emulated network.

`hook.py` is the PyTorch DDP communication hook (any `hosts.api.Allreducer`: INA through the
switch, or a host algorithm); `task.py` the data and model; `config.py` the run's settings;
`worker.py` one worker process on a Mininet host and `mininet_train.py` the Mininet run;
`sim_train.py` simulated workers over `inaemu.sim`; `results.py` and `report.py` the records,
table, CSVs and plot; `cli.py` the command (docs/train.md).
"""
