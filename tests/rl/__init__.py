"""Tests of rl/ and the `train` and `eval` commands (issue 39: tests mirror the packages, tests/<package>/)."""
