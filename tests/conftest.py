"""Shared test fixtures: paths to the project's data and to ../shared/data."""

import os
import sys

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEST_DATA = os.path.join(REPO_ROOT, "tests", "data")
SHARED_DATA = os.path.normpath(os.path.join(REPO_ROOT, "..", "shared", "data"))

if REPO_ROOT not in sys.path:
  sys.path.insert(0, REPO_ROOT)


def shared_path(relative):
  """Path of a file in ../shared/data; skips the test where it is absent."""
  path = os.path.join(SHARED_DATA, relative)
  if not os.path.exists(path):
    pytest.skip("%s is not available" % path)
  return path


def data_file(relative):
  return os.path.join(TEST_DATA, relative)
