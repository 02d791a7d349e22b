"""A training run into a directory holding another run's checkpoints: the
same settings resume, more epochs continue, anything else stops in one line
(plumbing/run_directory/settings.py), and --start_over moves the old run aside."""

import json
import logging
import os

import pytest

from conftest import assert_one_line_error, run_cli_cases
from plumbing.errors import UserError
from plumbing.run_directory import settings as run_settings
from test_fine_tuning_protocol import tiny_mrpc_args, write_mrpc

SETTINGS = {"learning_rate": 5e-5, "num_train_epochs": 3.0, "seed": 12345,
            "train_file": {"path": "/data/train.csv", "bytes": 120}}


def _with_checkpoint(directory):
  """A directory as a run leaves it: TensorFlow's checkpoint record, a checkpoint."""
  directory.mkdir(exist_ok=True)
  (directory / "checkpoint").write_text('model_checkpoint_path: "ckpt-10"\n')
  (directory / "ckpt-10.index").write_bytes(b"index")
  return directory


def _recorded(directory):
  return json.loads((directory / run_settings.FILE_NAME).read_text())["settings"]


def test_the_same_settings_resume_and_a_check_writes_nothing(tmp_path):
  run = tmp_path / "out"
  run_settings.check(str(run), SETTINGS)
  assert not run.exists()  # A command that stops later on bad input leaves nothing.
  run_settings.write(str(run), SETTINGS)
  _with_checkpoint(run)
  before = sorted(p.name for p in run.iterdir())
  run_settings.check(str(run), dict(SETTINGS))
  assert sorted(p.name for p in run.iterdir()) == before and _recorded(run) == SETTINGS


def test_each_difference_is_named_with_both_values(tmp_path):
  run_settings.write(str(tmp_path), SETTINGS)
  _with_checkpoint(tmp_path)
  changed = dict(SETTINGS, learning_rate=3e-4,
                 train_file={"path": "/data/train.csv", "bytes": 99})
  with pytest.raises(UserError) as raised:
    run_settings.check(str(tmp_path), changed)
  message = str(raised.value)
  assert "\n" not in message
  assert "--learning_rate was 5e-05, now 0.0003" in message
  assert "--train_file was /data/train.csv (120 bytes), now /data/train.csv (99 bytes)" in message
  assert "--seed" not in message and "--num_train_epochs" not in message
  assert "--start_over" in message and "another --output_dir" in message
  assert _recorded(tmp_path) == SETTINGS


def test_a_setting_added_or_dropped_counts_as_a_difference(tmp_path):
  run_settings.write(str(tmp_path), SETTINGS)
  _with_checkpoint(tmp_path)
  with pytest.raises(UserError, match="--window_stride was not set, now 64"):
    run_settings.check(str(tmp_path), dict(SETTINGS, window_stride=64))


def test_more_epochs_continue_with_a_line_and_fewer_are_refused(tmp_path, caplog):
  run_settings.write(str(tmp_path), dict(SETTINGS, num_train_epochs=5.0))
  _with_checkpoint(tmp_path)
  with caplog.at_level(logging.INFO, logger="absl"):
    run_settings.check(str(tmp_path), dict(SETTINGS, num_train_epochs=7.0),
                       growing=("num_train_epochs",))
  assert "--num_train_epochs from 5.0 to 7.0" in caplog.text
  assert "schedule changes" in caplog.text
  with pytest.raises(UserError, match="--num_train_epochs was 5.0, now 4.0"):
    run_settings.check(str(tmp_path), dict(SETTINGS, num_train_epochs=4.0),
                       growing=("num_train_epochs",))


def test_a_directory_without_checkpoints_takes_any_settings(tmp_path):
  run_settings.write(str(tmp_path), SETTINGS)  # A run that stopped before saving.
  run_settings.check(str(tmp_path), dict(SETTINGS, learning_rate=1.0))


def test_a_run_without_a_record_resumes_with_a_line(tmp_path, caplog):
  _with_checkpoint(tmp_path)
  with caplog.at_level(logging.INFO, logger="absl"):
    run_settings.check(str(tmp_path), SETTINGS)
  assert "settings were not recorded" in caplog.text


def test_start_over_moves_the_old_run_aside_and_keeps_earlier_ones(tmp_path):
  run_settings.write(str(tmp_path), SETTINGS)
  _with_checkpoint(tmp_path)
  (tmp_path / "best").mkdir()
  (tmp_path / "best" / "history.json").write_text("{}")
  (tmp_path / ".run.lock").write_text("")
  run_settings.check(str(tmp_path), dict(SETTINGS, learning_rate=1.0), start_over=True)
  [moved] = (tmp_path / run_settings.PREVIOUS_RUNS).iterdir()
  assert sorted(p.name for p in moved.iterdir()) == [
      "best", "checkpoint", "ckpt-10.index", run_settings.FILE_NAME]
  assert _recorded(moved) == SETTINGS
  assert sorted(p.name for p in tmp_path.iterdir()) == [".run.lock", run_settings.PREVIOUS_RUNS]
  _with_checkpoint(tmp_path)
  run_settings.check(str(tmp_path), SETTINGS, start_over=True)  # Again, a second run aside.
  assert len(list((tmp_path / run_settings.PREVIOUS_RUNS).iterdir())) == 2


def test_files_are_recorded_by_path_and_size(tmp_path):
  data = tmp_path / "glue"
  (data / "multinli").mkdir(parents=True)
  (data / "train.tsv").write_text("abc")
  (data / "dev.tsv").write_text("abcdef")
  (data / "multinli" / "multinli.train.zh.tsv").write_text("ab")
  assert run_settings.file_setting(str(data / "train.tsv")) == {
      "path": str(data / "train.tsv"), "bytes": 3}
  # A directory: the training files in it, not dev or test (predicting on a
  # new test file is no other run).
  assert run_settings.file_setting(str(data)) == {
      "path": str(data), "training_files": {"train.tsv": 3, "multinli/multinli.train.zh.tsv": 2}}
  assert run_settings.file_setting(str(data / "*.tsv")) == [
      {"path": str(data / "dev.tsv"), "bytes": 6}, {"path": str(data / "train.tsv"), "bytes": 3}]
  assert run_settings.file_setting("tfds") == "tfds"


def test_run_classifier_refuses_a_changed_run_and_continues_a_longer_one(tmp_path):
  data = tmp_path / "data"
  write_mrpc(data)
  out = tmp_path / "out"
  common = tiny_mrpc_args(data) + ["--do_train", "--train_batch_size=8",
                                   "--output_dir=%s" % out, "--save_checkpoints_steps=3"]
  first, changed, again, longer, predict, over = run_cli_cases("run_classifier.py", [
      common + ["--learning_rate=1e-3", "--num_train_epochs=1"],
      common + ["--learning_rate=3e-3", "--num_train_epochs=1", "--seed=7"],
      common + ["--learning_rate=1e-3", "--num_train_epochs=1"],
      common + ["--learning_rate=1e-3", "--num_train_epochs=2"],
      # Predicting is not training: its learning rate is not looked at.
      [a for a in common if a != "--do_train"] + ["--learning_rate=9", "--do_predict"],
      common + ["--learning_rate=3e-3", "--num_train_epochs=1", "--start_over"],
  ])
  assert first.returncode == 0, first.stderr[-3000:]
  assert_one_line_error(changed, "run_classifier.py", "holds checkpoints of a run with other settings")
  line = changed.stderr.strip().splitlines()[-1]
  assert "--learning_rate was 0.001, now 0.003" in line and "--seed was 12345, now 7" in line
  assert "--num_train_epochs" not in line
  assert again.returncode == 0 and "Already at step 6 of 6" in again.stderr, again.stderr[-3000:]
  assert longer.returncode == 0, longer.stderr[-3000:]
  assert "--num_train_epochs from 1.0 to 2.0" in longer.stderr
  assert "Resuming from" in longer.stderr and "step 12/12" in longer.stderr
  assert predict.returncode == 0, predict.stderr[-3000:]
  assert over.returncode == 0, over.stderr[-3000:]
  [previous] = (out / run_settings.PREVIOUS_RUNS).iterdir()
  assert sorted(p.name for p in previous.glob("ckpt-*.index")) == [
      "ckpt-12.index", "ckpt-3.index", "ckpt-6.index", "ckpt-9.index"]
  assert "Resuming" not in over.stderr
  assert sorted(p.name for p in out.glob("ckpt-*.index")) == ["ckpt-3.index", "ckpt-6.index"]
  recorded = json.loads((out / run_settings.FILE_NAME).read_text())["settings"]
  assert recorded["learning_rate"] == 3e-3 and recorded["task_name"] == "MRPC"
  assert recorded["data_dir"]["training_files"] == {
      "train.tsv": os.path.getsize(data / "train.tsv")}
