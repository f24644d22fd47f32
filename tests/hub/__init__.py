"""Tests of hub/ (issue 39: tests mirror the packages, tests/<package>/)."""
