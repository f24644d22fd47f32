"""The RL stage: RL-ready columns, the reward, the TRL and verl launchers and evaluation.

Runs in its own environment on GPU machines, so nothing here is imported by the core pipeline
and heavy libraries (torch, trl, transformers) are imported inside the functions that need them.
"""
