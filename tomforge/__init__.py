"""tomforge: build, audit and publish Theory-of-Mind data for RL with verifiable rewards.

One installed namespace. The repository keeps the design card's top-level folders (`flows/`,
`generators/`, `schemas/`, `audits/`, `warehouse/`, plus `hub/` and `rl/`); `tomforge/` holds a
link to each, so they install and import as `tomforge.audits`, `tomforge.flows`, ... and never
collide with a user's own `flows` or `hub` package.
"""

from importlib import metadata

try:
    __version__ = metadata.version("tomforge")
except metadata.PackageNotFoundError:  # a checkout on PYTHONPATH, not installed
    __version__ = "0+unknown"
