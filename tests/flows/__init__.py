"""Tests of flows/ (issue 39: tests mirror the packages, tests/<package>/)."""
