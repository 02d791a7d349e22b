"""Damaged files: a TFRecord cut short or changed after it was written, a
checkpoint whose files are incomplete, a vocabulary larger than the model's.
Each is one line naming the file (and the record) and what to do; a damaged
latest checkpoint of a run is reported with the way back to the one before."""

import json
import os
import shutil
import subprocess
import sys
import types

import pytest
import tensorflow as tf

from conftest import REPO_ROOT, assert_one_line_error, data_file, run_cli_cases
from modeling.checkpoints import DamagedCheckpointError
from pretraining_runs import assert_reference_trajectory, reference_run

CONFIG = data_file("eval_reference/bert_config.json")
RECORDS = data_file("pretraining_reference/sample_default.tfrecord")  # 23 records, seq 128


def _frame_starts(path):
  """Byte offset of each record's frame, from the records TensorFlow reads
  (a frame: 8-byte length, 4-byte CRC, the data, 4-byte CRC)."""
  starts, offset = [], 0
  for record in tf.data.TFRecordDataset(path):
    starts.append(offset)
    offset += 16 + len(record.numpy())
  assert offset == os.path.getsize(path)
  return starts


def _truncate(path, size):
  with open(path, "r+b") as f:
    f.truncate(size)


def _flip_byte(path, offset):
  with open(path, "r+b") as f:
    f.seek(offset)
    byte = f.read(1)[0]
    f.seek(offset)
    f.write(bytes([byte ^ 0x10]))


def test_damaged_records_and_checkpoints_are_one_line(tmp_path):
  starts = _frame_starts(RECORDS)
  truncated = str(tmp_path / "truncated.tfrecord")
  shutil.copy(RECORDS, truncated)
  _truncate(truncated, starts[2] + 12 + 5)  # Inside record 3's data.
  flipped = str(tmp_path / "flipped.tfrecord")
  shutil.copy(RECORDS, flipped)
  _flip_byte(flipped, starts[4] + 12 + 7)  # A bit of record 5's data.
  checkpoint = tmp_path / "ckpt" / "model.ckpt"
  os.makedirs(checkpoint.parent)
  for name in os.listdir(os.path.dirname(data_file("eval_reference/model.ckpt"))):
    if name.startswith("model.ckpt"):
      shutil.copy(data_file("eval_reference/" + name), checkpoint.parent / name)
  data_file_name = str(checkpoint) + ".data-00000-of-00001"
  _truncate(data_file_name, os.path.getsize(data_file_name) // 2)

  def case(input_file, name, *extra):
    return ["--bert_config_file=" + CONFIG, "--input_file=" + input_file, "--do_train",
            "--output_dir=%s" % (tmp_path / name), "--train_batch_size=8",
            "--num_train_steps=2", "--num_warmup_steps=1"] + list(extra)
  cut, changed, half_checkpoint = run_cli_cases("run_pretraining.py", [
      case(truncated, "cut"), case(flipped, "changed"),
      case(RECORDS, "init", "--init_checkpoint=%s" % checkpoint)])
  assert_one_line_error(cut, "run_pretraining.py", truncated + ": record 3 cannot be read",
                         "truncated", "the 2 before it are intact", "copy or generate it again")
  assert_one_line_error(changed, "run_pretraining.py", flipped + ": record 5 cannot be read",
                         "fails its checksum", "the 4 before it are intact")
  assert_one_line_error(half_checkpoint, "run_pretraining.py", str(checkpoint),
                         "the checkpoint cannot be read", "incomplete or damaged")
  for name in ("cut", "changed", "init"):
    assert tf.train.latest_checkpoint(str(tmp_path / name)) is None


def test_a_vocabulary_larger_than_the_model_is_one_line(tmp_path):
  small_config = data_file("modeling_reference/bert_config.json")  # vocab_size 99
  vocab = data_file("vocab/bert_uncased_vocab.txt")  # 30,522 entries
  (tmp_path / "data").mkdir()
  (tmp_path / "data" / "dev.tsv").write_text(
      "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t1\t2\tA cat.\tA dog.\n")
  (result,) = run_cli_cases("run_classifier.py", [[
      "--task_name=MRPC", "--do_eval", "--data_dir=%s" % (tmp_path / "data"),
      "--vocab_file=" + vocab, "--bert_config_file=" + small_config,
      "--max_seq_length=32", "--output_dir=%s" % (tmp_path / "out")]])
  assert_one_line_error(result, "run_classifier.py", vocab, "30522 entries",
                         "vocab_size 99", small_config)
  assert not (tmp_path / "out" / "eval.tf_record").exists()


def test_a_damaged_latest_checkpoint_is_reported_and_the_advice_resumes(tmp_path):
  """The run's newest checkpoint lost half its data file: the re-run stops
  with one line naming it and saying how to resume from the one before;
  doing that ends on the original's trajectory."""
  out_dir = str(tmp_path / "loop")
  reference_run("one_device", 1, out_dir, save_every=2, stop_after=4)
  latest = tf.train.latest_checkpoint(out_dir)
  assert latest.endswith("ckpt-4")
  _truncate(latest + ".data-00000-of-00001",
            os.path.getsize(latest + ".data-00000-of-00001") // 2)
  with pytest.raises(DamagedCheckpointError) as raised:
    reference_run("one_device", 1, out_dir, save_every=2, init=None)
  message = str(raised.value)
  state = os.path.join(out_dir, "checkpoint")
  assert message.startswith(latest + ": the checkpoint cannot be read")
  assert ("delete %s.* and set the first line of %s to: model_checkpoint_path: \"ckpt-2\""
          % (latest, state)) in message
  for name in os.listdir(out_dir):  # What the message says to do.
    if name.startswith("ckpt-4."):
      os.remove(os.path.join(out_dir, name))
  with open(state) as f:
    lines = f.read().splitlines()
  lines[0] = 'model_checkpoint_path: "ckpt-2"'
  with open(state, "w") as f:
    f.write("\n".join(lines) + "\n")
  assert_reference_trajectory(reference_run("one_device", 1, out_dir, save_every=2, init=None))


def test_a_full_disk_while_saving_a_checkpoint_keeps_the_last_one_loadable(tmp_path, monkeypatch):
  """The disk fills while TensorFlow writes ckpt-4 (its temporary files are
  partly written, then the write fails as TensorFlow reports ENOSPC): the
  error is the one-line kind, and the same run resumes from ckpt-2 and ends
  on the original's trajectory."""
  from plumbing import cli  # pylint: disable=g-import-not-at-top
  out_dir = str(tmp_path / "loop")
  real_save = tf.train.CheckpointManager.save

  def save_on_a_full_disk(manager, checkpoint_number=None, **kwargs):
    if int(checkpoint_number) == 4:
      partial = os.path.join(out_dir, "ckpt-4_temp")
      os.makedirs(partial)
      with open(os.path.join(partial, "part-00000-of-00001.data-00000-of-00001"), "wb") as f:
        f.write(b"\0" * 1000)
      raise tf.errors.ResourceExhaustedError(
          None, None, "%s/part-00000-of-00001.data-00000-of-00001; No space left on device" % partial)
    return real_save(manager, checkpoint_number=checkpoint_number, **kwargs)

  monkeypatch.setattr(tf.train.CheckpointManager, "save", save_on_a_full_disk)
  with pytest.raises(tf.errors.ResourceExhaustedError) as raised:
    reference_run("one_device", 1, out_dir, save_every=2)
  assert cli._out_of_space(raised.value)  # pylint: disable=protected-access
  assert tf.train.latest_checkpoint(out_dir).endswith("ckpt-2")
  assert not [n for n in os.listdir(out_dir) if n.startswith("ckpt-4")]  # No partial save.
  monkeypatch.setattr(tf.train.CheckpointManager, "save", real_save)
  assert_reference_trajectory(reference_run("one_device", 1, out_dir, save_every=2, init=None))


def _disk_usage(path):
  return sum(os.path.getsize(os.path.join(d, n)) for d, _, names in os.walk(path) for n in names)


def test_a_real_full_disk_while_saving_leaves_no_partial_checkpoint(tmp_path):
  """The same on a real small file system (a tmpfs; skipped where this
  process may not mount one): ckpt-2 is saved, the disk is then filled to
  leave room for half a checkpoint, and saving ckpt-4 fails. Nothing of
  ckpt-4 stays (TensorFlow alone leaves its ckpt-4_temp/ directory), and the
  run resumes from ckpt-2 once there is room, ending on the original's
  trajectory."""
  mount_point = tmp_path / "small_disk"
  mount_point.mkdir()
  mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount_point)],
                           capture_output=True, text=True, check=False)
  if mounted.returncode:
    pytest.skip("cannot mount a tmpfs here: " + mounted.stderr.strip())
  try:
    out_dir = str(mount_point / "run")
    reference_run("one_device", 1, out_dir, save_every=2, stop_after=2)
    checkpoint_bytes = _disk_usage(out_dir)
    free = shutil.disk_usage(mount_point).free
    filler = mount_point / "filler"
    with open(filler, "wb") as f:
      f.write(b"\0" * (free - checkpoint_bytes // 2))
    with pytest.raises((OSError, tf.errors.OpError)):
      reference_run("one_device", 1, out_dir, save_every=2, init=None)
    assert tf.train.latest_checkpoint(out_dir).endswith("ckpt-2")
    assert not [n for n in os.listdir(out_dir) if n.startswith("ckpt-4")], os.listdir(out_dir)
    os.remove(filler)
    assert_reference_trajectory(reference_run("one_device", 1, out_dir, save_every=2, init=None))
  finally:
    subprocess.run(["umount", str(mount_point)], check=False)


# Runs cli_cases' cases with the disk full for the files the project writes
# (their temporary names): `write` or `close` fails with ENOSPC, as a full
# disk makes them fail.
_DISK_FULL = r"""
import builtins, errno, io, json, sys
repo, failing_call, entry_point, cases_file = sys.argv[1:5]
sys.path[:0] = [repo, repo + "/tests"]
real_open = builtins.open

class Failing:
  def write(self, data):
    if failing_call == "write":
      raise OSError(errno.ENOSPC, "No space left on device", self.name)
    return super().write(data)

  def close(self):
    if failing_call == "close" and not self.closed:
      super().close()
      raise OSError(errno.ENOSPC, "No space left on device", self.name)
    return super().close()

class FullDisk(Failing, io.TextIOWrapper):
  pass

class FullDiskBinary(Failing, io.BufferedWriter):
  pass

def open_on_full_disk(file, mode="r", *args, **kwargs):
  if ".tmp-" in str(file) and "w" in mode:
    if "b" in mode:
      return FullDiskBinary(real_open(file, "wb", buffering=0))
    return FullDisk(real_open(file, "wb"), encoding="utf-8")
  return real_open(file, mode, *args, **kwargs)

builtins.open = open_on_full_disk
import cli_cases
print("CASES " + json.dumps(cli_cases.run_cases(entry_point, json.load(real_open(cases_file)))))
"""


_FULL_DISK_JOBS = {  # entry point, arguments, the file named
    "eval_results": ("run_pretraining.py", [
        "--bert_config_file=" + CONFIG, "--input_file=" + RECORDS, "--do_eval",
        "--init_checkpoint=" + data_file("eval_reference/model.ckpt"), "--max_eval_steps=1",
        "--output_dir={out}"], "{out}/eval_results.txt"),
    "pretraining_data": ("create_pretraining_data.py", [
        "--input_file=" + data_file("pretraining_corpus_a.txt"),
        "--vocab_file=" + data_file("vocab/bert_uncased_vocab.txt"), "--dupe_factor=1",
        "--output_file={out}/a.tfrecord,{out}/b.tfrecord"], "{out}/a.tfrecord"),
}


@pytest.mark.parametrize("job", sorted(_FULL_DISK_JOBS))
@pytest.mark.parametrize("failing_call", ["write", "close"])
def test_a_full_disk_is_one_line_and_leaves_no_partial_file(tmp_path, failing_call, job):
  """run_pretraining.py --do_eval and create_pretraining_data on a full disk:
  one line naming the file and what to do, status 1, and no output file,
  whole or partial, under its final or its temporary name."""
  out_dir = tmp_path / "out"
  out_dir.mkdir()
  entry_point, args, named = _FULL_DISK_JOBS[job]
  cases_file = tmp_path / "cases.json"
  cases_file.write_text(json.dumps([[a.format(out=out_dir) for a in args]]))
  result = subprocess.run(
      [sys.executable, "-c", _DISK_FULL, REPO_ROOT, failing_call, entry_point,
       str(cases_file)], cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  lines = [l for l in result.stdout.splitlines() if l.startswith("CASES ")]
  assert result.returncode == 0 and lines, result.stderr[-3000:]
  (case,) = [types.SimpleNamespace(**r) for r in json.loads(lines[-1][len("CASES "):])]
  program = entry_point.rsplit(".", 1)[-1] + ".py" if "/" not in entry_point and not entry_point.endswith(".py") else entry_point
  assert_one_line_error(case, program, "out of disk space writing",
                         named.format(out=out_dir), "Free some space")
  assert sorted(os.listdir(out_dir)) == []
