"""Tests of schemas/ (issue 39: tests mirror the packages, tests/<package>/)."""
