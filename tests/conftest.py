"""Shared test fixtures: paths to the project's data and to ../shared/data."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
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


# The small model the original's reference outputs were made with
# (tests/data/modeling_reference/README.md).
MODELING_REF = "modeling_reference/"
PRETRAINING_FEATURES = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions",
                        "masked_lm_ids", "masked_lm_weights", "next_sentence_labels")


def reference_config(**overrides):
  """The reference BertConfig, with fields overridden."""
  import modeling
  with open(data_file(MODELING_REF + "bert_config.json")) as f:
    values = json.load(f)
  values.update(overrides)
  return modeling.BertConfig.from_dict(values)


def reference_inputs():
  return dict(np.load(data_file(MODELING_REF + "inputs.npz")))


def reference_outputs():
  return dict(np.load(data_file(MODELING_REF + "outputs.npz")))


def reference_checkpoint():
  return data_file(MODELING_REF + "model.ckpt")


def kill_when_written(command, path, timeout=300):
  """Runs `command` (from the repo root) and kills it (SIGKILL, no clean-up)
  as soon as `path` exists, as a crash or preemption would."""
  proc = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
  deadline = time.time() + timeout
  while not os.path.exists(path) and proc.poll() is None and time.time() < deadline:
    time.sleep(0.05)
  proc.send_signal(signal.SIGKILL)
  proc.wait()
