"""The world model a record's trace is written in: the generator checks its golds with it and the RL
stage's process reward rebuilds it from a release, so it belongs to neither and imports nothing of them."""
