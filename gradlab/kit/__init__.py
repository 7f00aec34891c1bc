"""The kit: what lessons and exercises share, and the only gradlab (besides gradlab.errors) a lesson imports.

options (a setting's declaration), result (Result, Claim, Table, Curve), training, rl, optim, data, device, threads,
distributed and workers (torch.distributed, started here), autograd_graph (the measured backward graph), exercise
and harness (the vocabulary an exercise is written in). Importing this package imports nothing: torch comes with
the modules that need it.
"""
