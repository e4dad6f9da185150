"""Runs one unittest test (module.Class.test_name) for ctest: exit 0 passed, 1 failed,
77 skipped (ctest's SKIP_RETURN_CODE), so a skip shows as a skip. Not for: discovery;
tests/python.cmake registers each test method as its own ctest entry."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
suite = unittest.defaultTestLoader.loadTestsFromName(sys.argv[1])
result = unittest.TextTestRunner(verbosity=2).run(suite)
if not result.wasSuccessful():
    sys.exit(1)
sys.exit(77 if result.skipped and not result.testsRun - len(result.skipped) else 0)
