"""Tests of generators/ and the `generate` command (issue 39: tests mirror the packages, tests/<package>/)."""
