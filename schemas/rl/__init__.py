"""The RL columns every release carries and the licenses that allow training: record contract, not the RL stage.

They sit in `schemas/` (the lowest layer) because both the exporter and the GPU machine's reward read them.
"""
