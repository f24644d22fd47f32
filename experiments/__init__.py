"""Experiment and smoke-run scripts, outside the installed `tomforge` package: they drive the pipeline
(the CLI, the warehouse, the generator, the audit) and the RL stage together, which no layer of the
package may do. Run them from the repository root: `python -m experiments.<name>` (see docs/rl.md)."""
