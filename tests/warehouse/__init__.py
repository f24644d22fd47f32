"""Tests of warehouse/ (issue 39: tests mirror the packages, tests/<package>/)."""
