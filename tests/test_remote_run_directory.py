"""A run directory on a file system that is not the local disk (gs://, ...):
every file a run keeps there goes through plumbing.files. TensorFlow's
in-memory file system (ram://) stands in for a bucket: it is reached only
through tf.io.gfile, so a file read or written with Python's open or os.path
is not found there."""

import os
import re

import tensorflow as tf

from conftest import run_cli_cases
from data_prep import casing
from modeling.checkpoints import keras_hub
from modeling.checkpoints import sentence_transformers
from plumbing import files
from plumbing.run_directory import settings as run_settings
from tasks.classification import grid
from test_fine_tuning_protocol import tiny_mrpc_args, write_mrpc


def _write(path, text):
  with tf.io.gfile.GFile(path, "w") as f:
    f.write(text)


def test_the_casing_record_is_written_and_read_back():
  run = "ram://casing/run"
  assert casing.read(run) is None
  casing.write(run, False)
  assert casing.read(run).do_lower_case is False
  casing.write(run, True)
  assert casing.read(run).do_lower_case is True
  assert "ram://casing/run/tokenizer_config.json" in casing.read(run).describe()


def test_data_files_are_recorded_with_their_sizes():
  _write("ram://data/train.tsv", "abc")
  _write("ram://data/dev.tsv", "abcdef")
  assert run_settings.file_setting("ram://data/train.tsv") == {
      "path": "ram://data/train.tsv", "bytes": 3}
  assert run_settings.file_setting("ram://data") == {
      "path": "ram://data", "training_files": {"train.tsv": 3}}
  assert run_settings.file_setting("ram://data/*.tsv") == [
      {"path": "ram://data/dev.tsv", "bytes": 6}, {"path": "ram://data/train.tsv", "bytes": 3}]


def test_a_grid_claims_finds_and_copies_its_runs():
  setting = grid.Setting(32, 2e-5, 3.0, 0)
  run = "ram://grid/" + grid.run_name(setting)
  grid.claim(run, setting, seed=1)
  grid.claim(run, setting, seed=1)  # The same run again is its own.
  _write(run + "/eval_results.txt", "eval_accuracy = 0.75\nglobal_step = 10\n")
  _write(run + "/test_results.tsv", "0.1\t0.9\n")
  assert grid.finished(run, ["eval_results.txt", "test_results.tsv"])
  assert not grid.finished(run, ["MRPC.tsv"])
  assert grid.read_eval_results(run + "/eval_results.txt") == {
      "eval_accuracy": 0.75, "global_step": 10.0}
  assert grid.copy_best(run, "ram://grid/best") == ["eval_results.txt", "test_results.tsv"]
  assert files.read_text("ram://grid/best/test_results.tsv") == "0.1\t0.9\n"


def test_sentence_vector_files_and_a_preset_record_are_read():
  run = "ram://vectors/run"
  for name, text in sentence_transformers.contents(8, "max", False, 64).items():
    files.makedirs(os.path.dirname(run + "/" + name))
    _write(run + "/" + name, text)
  assert sentence_transformers.holds_files(run)
  found, _ = sentence_transformers.read_files(run)
  assert (found["pooling"][0], found["normalize"][0], found["max_seq_length"][0]) == (
      "max", False, 64)
  _write(run + "/" + keras_hub.RECORD, '{"task": "text_embedder"}')
  assert keras_hub.read_record(["ram://vectors/elsewhere", run]) == {"task": "text_embedder"}


def test_a_run_trained_evaluated_and_refused_on_a_remote_directory(tmp_path):
  data = tmp_path / "data"
  write_mrpc(data)
  common = tiny_mrpc_args(data) + ["--train_batch_size=8", "--output_dir=ram://run"]
  training = ["--do_train", "--do_eval", "--num_train_epochs=3", "--eval_every_steps=2",
              "--save_checkpoints_steps=6"]
  trained, later, changed = run_cli_cases("run_classifier.py", [
      common + training + ["--learning_rate=1e-3"],
      common + ["--do_eval"],
      common + training + ["--learning_rate=3e-3"],
  ])
  assert trained.returncode == 0, trained.stderr[-3000:]
  best_step = re.findall(r"Step (\d+): eval_f1 = [0-9.]+, the best so far", trained.stderr)[-1]
  assert later.returncode == 0, later.stderr[-3000:]
  # The best weights' history and checkpoint are found in the remote directory.
  assert "Reading the weights of ram://run/best/ckpt-%s: the best on dev" % best_step in (
      later.stderr)
  assert changed.returncode != 0
  assert "--learning_rate was 0.001, now 0.003" in changed.stderr.strip().splitlines()[-1]
