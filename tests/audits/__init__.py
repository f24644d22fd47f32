"""Tests of audits/ and the audit and scan commands' audit code (issue 39: tests mirror the packages, tests/<package>/)."""
