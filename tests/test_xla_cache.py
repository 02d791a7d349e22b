"""Compiled XLA kernels kept between runs (plumbing/xla_cache.py): a later
process loads what an earlier one compiled, with the same results, in a
folder of its own for each CPU; when the cache cannot be used, nothing
breaks."""

import os
import subprocess
import sys

import numpy as np

from conftest import REPO_ROOT
from plumbing import xla_cache

# A fused kernel's forward and gradient (training's XLA kernels), in a fresh
# process with the cache in the directory given.
_KERNELS = r"""
import sys
sys.path.insert(0, %(root)r)
import plumbing.startup
from plumbing import xla_cache
print("FOLDER", xla_cache.enable(sys.argv[1]))
import numpy as np
import tensorflow as tf
from modeling.blocks import fused
x = tf.constant(np.random.default_rng(0).normal(size=(3, 16, 24)), tf.float32)
with tf.GradientTape() as tape:
  tape.watch(x)
  y = fused.gelu(x)
  loss = tf.reduce_sum(y * y)
g = tape.gradient(loss, x)
np.save(sys.argv[2], np.stack([y.numpy(), g.numpy()]))
"""


def _run_kernels(cache, output):
  result = subprocess.run(
      [sys.executable, "-c", _KERNELS % {"root": REPO_ROOT}, str(cache), str(output)],
      capture_output=True, text=True, timeout=300,
      env=dict((k, v) for k, v in os.environ.items() if k != "TF_XLA_FLAGS"))
  assert result.returncode == 0, result.stderr[-3000:]
  return [l.split(" ", 1)[1] for l in result.stdout.splitlines() if l.startswith("FOLDER ")][0]


def _entries(folder):
  return {name: os.path.getmtime(os.path.join(folder, name)) for name in os.listdir(folder)}


def test_a_second_process_loads_the_kernels_the_first_compiled(tmp_path):
  folder = _run_kernels(tmp_path / "cache", tmp_path / "first.npy")
  assert os.path.dirname(folder) == str(tmp_path / "cache")
  compiled = _entries(folder)
  assert compiled and all(n.endswith(".pb") for n in compiled), compiled
  assert _run_kernels(tmp_path / "cache", tmp_path / "second.npy") == folder
  assert _entries(folder) == compiled  # Loaded, not compiled and written again.
  assert _run_kernels("", tmp_path / "uncached.npy") == "None"
  first, second, uncached = (np.load(tmp_path / n) for n in ("first.npy", "second.npy",
                                                              "uncached.npy"))
  np.testing.assert_array_equal(second, first)
  np.testing.assert_array_equal(uncached, first)


def test_each_cpu_and_gpu_gets_its_own_folder(monkeypatch):
  monkeypatch.setattr(xla_cache, "_gpus", lambda: "")
  monkeypatch.setattr(xla_cache, "_cpu_features", lambda: "flags : fpu sse2 avx2")
  avx2 = xla_cache.folder_for_this_machine("/cache")
  assert xla_cache.folder_for_this_machine("/cache") == avx2  # Stable.
  monkeypatch.setattr(xla_cache, "_cpu_features", lambda: "flags : fpu sse2 avx2 avx512f")
  avx512 = xla_cache.folder_for_this_machine("/cache")
  monkeypatch.setattr(xla_cache, "_gpus", lambda: "Model: NVIDIA A100-SXM4-40GB\n")
  with_gpu = xla_cache.folder_for_this_machine("/cache")
  assert len({avx2, avx512, with_gpu}) == 3
  assert {os.path.dirname(f) for f in (avx2, avx512, with_gpu)} == {"/cache"}


def test_no_cache_when_it_cannot_be_used(tmp_path, monkeypatch):
  monkeypatch.delenv("TF_XLA_FLAGS", raising=False)
  assert xla_cache.enable("") is None
  (tmp_path / "plain").write_text("")
  assert xla_cache.enable(str(tmp_path / "plain")) is None  # A file where the folder goes.
  assert xla_cache.enable(str(tmp_path / "with space")) is None  # TF_XLA_FLAGS splits there.
  assert "TF_XLA_FLAGS" not in os.environ
  monkeypatch.setenv("TF_XLA_FLAGS", "--tf_xla_persistent_cache_directory=/theirs")
  assert xla_cache.enable(str(tmp_path / "ours")) is None  # The user's own setting wins.
  assert os.environ["TF_XLA_FLAGS"] == "--tf_xla_persistent_cache_directory=/theirs"
  monkeypatch.setenv("TF_XLA_FLAGS", "--tf_xla_auto_jit=2")
  folder = xla_cache.enable(str(tmp_path / "ours"))
  assert os.path.isdir(folder) and os.path.dirname(folder) == str(tmp_path / "ours")
  assert os.environ["TF_XLA_FLAGS"] == (
      "--tf_xla_auto_jit=2 --tf_xla_persistent_cache_directory=" + folder)


def test_scripts_set_the_cache_up_as_they_parse_their_flags(tmp_path, monkeypatch):
  """Before absl's init callbacks start TensorFlow's devices (XLA reads its
  options then), from --xla_cache_dir."""
  from absl import flags  # pylint: disable=g-import-not-at-top
  from absl.testing import flagsaver  # pylint: disable=g-import-not-at-top
  import importlib  # pylint: disable=g-import-not-at-top
  importlib.import_module("run_flags")  # Defines --xla_cache_dir.
  from plumbing import cli  # pylint: disable=g-import-not-at-top
  parse = cli._parse_then_set_up_xla_cache(  # pylint: disable=protected-access
      lambda argv: flags.FLAGS(argv, known_only=True))
  monkeypatch.setenv("BERT_TF2_CACHE_DIR", str(tmp_path / "home"))
  for given, expected in ((["--xla_cache_dir=" + str(tmp_path / "mine")], str(tmp_path / "mine")),
                          ([], str(tmp_path / "home" / "xla")),  # The default.
                          (["--xla_cache_dir="], None)):
    monkeypatch.delenv("TF_XLA_FLAGS", raising=False)
    with flagsaver.flagsaver():
      parse(["run_classifier.py"] + given)
    got = os.environ.get("TF_XLA_FLAGS")
    if expected is None:
      assert got is None
    else:
      assert got == "--tf_xla_persistent_cache_directory=" + xla_cache.folder_for_this_machine(
          expected)
