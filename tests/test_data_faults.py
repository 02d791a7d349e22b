"""Faults while making pre-training data: an input file that vanishes or
changes while it is read, SIGTERM in the middle of a run (one output, sharded,
Beam) and a full output disk. Each is one line, leaves no partial .tfrecord,
and the same command run again writes the original's records."""

import glob
import os
import shutil
import signal
import subprocess
import sys

import pytest

from conftest import REPO_ROOT, data_file
from data_prep.pretraining import corpus as corpus_lib
from data_prep.pretraining import generator
from data_prep import tokenization
from plumbing import text_io
from plumbing.errors import UserError
from pretraining_references import REFERENCE_RUNS, read_records, reference_outputs

# own_cased_multi: the project's two corpora, two outputs, made by the original.
_, INPUTS, VOCAB, _, FLAG_VALUES = REFERENCE_RUNS["own_cased_multi"]
CPD_FLAGS = ["--vocab_file=" + data_file(VOCAB)] + [
    "--%s=%s" % (k, v) for k, v in sorted(FLAG_VALUES.items())]


def _copy_inputs(tmp_path):
  folder = tmp_path / "corpus"
  folder.mkdir()
  paths = []
  for name in INPUTS:
    shutil.copy(data_file(name), folder / name)
    paths.append(str(folder / name))
  return paths


def _generate(inputs, outputs):
  values = dict(FLAG_VALUES)
  tokenizer = tokenization.FullTokenizer(data_file(VOCAB), values.pop("do_lower_case"))
  return generator.generate(inputs, outputs, tokenizer, generator.Options(**values))


def _assert_original_records(outputs):
  for ours, theirs in zip(outputs, reference_outputs("own_cased_multi")):
    assert read_records([ours]) == read_records([theirs])


class _Tokenizer(tokenization.FullTokenizer):
  """Runs `fault` once, after the first batch of lines is tokenized."""
  fault = None

  def tokenize_to_ids_batch(self, lines, num_threads=1):
    result = super().tokenize_to_ids_batch(lines, num_threads)
    fault, _Tokenizer.fault = _Tokenizer.fault, None
    if fault:
      fault()
    return result


def _delete(path):
  os.remove(path)


def _truncate(path):
  with open(path, "r+b") as f:
    f.truncate(100)


def _append(path):
  with open(path, "ab") as f:
    f.write(b"One more line from a writer that had not finished.\n")


@pytest.mark.parametrize("fault, file_index, message", [
    (_delete, 1, "No such file or directory"),
    (_truncate, 0, "changed while it was read"),
    (_append, 0, "changed while it was read"),
])
def test_an_input_that_vanishes_or_changes_is_named_and_the_rerun_is_identical(
    tmp_path, monkeypatch, fault, file_index, message):
  inputs = _copy_inputs(tmp_path)
  out = tmp_path / "out"
  out.mkdir()
  outputs = [str(out / "a.tfrecord"), str(out / "b.tfrecord")]
  monkeypatch.setattr(corpus_lib, "_LINES_PER_BATCH", 5)  # Read in steps.
  monkeypatch.setattr(text_io, "_CHUNK_BYTES", 256)
  monkeypatch.setattr(tokenization, "FullTokenizer", _Tokenizer)
  _Tokenizer.fault = lambda: fault(inputs[file_index])
  with pytest.raises((UserError, FileNotFoundError)) as raised:
    _generate(inputs, outputs)
  assert inputs[file_index] in str(raised.value) and message in str(raised.value)
  assert os.listdir(out) == []
  for path in inputs:  # Put the corpus back as it was; the re-run is exact.
    shutil.copy(data_file(os.path.basename(path)), path)
  _generate(inputs, outputs)
  _assert_original_records(outputs)


# Runs a data-generation entry point in a process that sends itself SIGTERM
# at a chosen point: argv = repo, where, module, args...
_SIGTERM_AT = r"""
import os, runpy, signal, sys, time
sys.path.insert(0, sys.argv[1])
where, module = sys.argv[2], sys.argv[3]
sys.argv = [module.rsplit(".", 1)[-1] + ".py"] + sys.argv[4:]

def terminate(pid):
  os.kill(pid, signal.SIGTERM)
  time.sleep(1.0)  # The signal is seen by then; the job goes on to a safe point.

from data_prep.pretraining import corpus, instances, records
if where == "reading":
  real_batch = corpus._tokenize_batch
  def tokenize_batch(*args):
    terminate(os.getpid())
    return real_batch(*args)
  corpus._tokenize_batch = tokenize_batch
elif where == "instances":
  real_create = instances.create_instances
  def create_instances(*args, **kwargs):
    terminate(os.getpid())
    return real_create(*args, **kwargs)
  instances.create_instances = create_instances
elif where.startswith("writing"):  # writing:N = while writing the N-th output.
  real_batches = records.iter_serialized_batches
  calls = []
  def iter_serialized_batches(*args, **kwargs):
    calls.append(1)
    for batch in real_batches(*args, **kwargs):
      if len(calls) == int(where.split(":")[1]):
        terminate(os.getpid())
      yield batch
  records.iter_serialized_batches = iter_serialized_batches
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


def _run(module, args, sigterm_at=None):
  command = [sys.executable, "-m", module] if sigterm_at is None else [
      sys.executable, "-c", _SIGTERM_AT, REPO_ROOT, sigterm_at, module]
  return subprocess.run(command + list(args), cwd=REPO_ROOT, capture_output=True,
                        text=True, timeout=600, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))


def _assert_stopped(result, program, doing):
  assert result.returncode == 128 + signal.SIGTERM, result.stderr[-3000:]
  lines = [l for l in result.stderr.splitlines() if l.startswith(program + ": ")]
  assert len(lines) == 1 and lines[0].startswith(program + ": stopped: SIGTERM " + doing), \
      result.stderr[-3000:]
  assert "Run the same command again" in lines[0] and "Traceback" not in result.stderr


@pytest.mark.parametrize("where, num_workers, doing", [
    ("reading", 2, "while reading the input text"),
    ("instances", 1, "while making instances (pass 1 of 3)"),
    ("writing:2", 1, "while writing records"),
])
def test_sigterm_stops_with_no_partial_output_and_the_rerun_is_the_originals(
    tmp_path, where, num_workers, doing):
  outputs = [str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")]
  args = CPD_FLAGS + ["--input_file=" + ",".join(data_file(p) for p in INPUTS),
                      "--output_file=" + ",".join(outputs), "--num_workers=%d" % num_workers]
  result = _run("create_pretraining_data", args, sigterm_at=where)
  _assert_stopped(result, "create_pretraining_data.py", doing)
  assert os.listdir(tmp_path) == []  # Not the first output either, nor a temporary file.
  result = _run("create_pretraining_data", args)
  assert result.returncode == 0, result.stderr[-3000:]
  _assert_original_records(outputs)


def test_sigterm_in_sharded_mode_keeps_finished_shards_and_the_rerun_completes(tmp_path):
  args = CPD_FLAGS + ["--input_file=" + ",".join(data_file(p) for p in INPUTS)]
  whole = tmp_path / "whole"
  assert _run("create_pretraining_data", args + ["--output_dir=%s" % whole]).returncode == 0
  out = tmp_path / "out"
  result = _run("create_pretraining_data", args + ["--output_dir=%s" % out],
                sigterm_at="writing:2")
  _assert_stopped(result, "create_pretraining_data.py", "while writing records")
  assert "1 of this task's 2 shards were complete" in result.stderr
  assert os.listdir(out) == [sorted(INPUTS)[0] + ".tfrecord"]
  result = _run("create_pretraining_data", args + ["--output_dir=%s" % out])
  assert result.returncode == 0 and "exists; skipping" in result.stderr, result.stderr[-3000:]
  for name in os.listdir(whole):
    assert read_records([str(out / name)]) == read_records([str(whole / name)])


def test_sigterm_during_a_beam_pipeline_leaves_no_output_and_the_rerun_completes(tmp_path):
  pytest.importorskip("apache_beam")
  args = CPD_FLAGS + ["--input_file=" + ",".join(data_file(p) for p in INPUTS)]
  out = tmp_path / "out"
  result = _run("beam_pretraining_data", args + ["--output_dir=%s" % out],
                sigterm_at="instances")
  _assert_stopped(result, "beam_pretraining_data.py", "during the pipeline")
  assert os.listdir(out) == []  # No output file, no beam-temp directory.
  result = _run("beam_pretraining_data", args + ["--output_dir=%s" % out])
  assert result.returncode == 0, result.stderr[-3000:]
  sharded = tmp_path / "sharded"
  assert _run("create_pretraining_data",
              args + ["--output_dir=%s" % sharded]).returncode == 0
  assert (sorted(r for p in glob.glob(str(out / "*.tfrecord*")) for r in _raw(p)) ==
          sorted(r for p in glob.glob(str(sharded / "*.tfrecord")) for r in _raw(p)))


def _raw(path):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return [r.numpy() for r in tf.data.TFRecordDataset(path)]
