"""Tests of schemas/rl/ (issue 39: tests mirror the packages, tests/<package>/)."""
