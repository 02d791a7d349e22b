"""The paper's fine-tuning protocol at a tiny size: run_classifier_grid.py's
grid with restarts, and run_classifier.py's --eval_every_steps (the best dev
weights, early stopping)."""

import json
import os
import random
import subprocess
import sys

from conftest import REPO_ROOT, data_file, read_eval_results

CONFIG = data_file("eval_reference/bert_config.json")
WORDS = ("the cat sat on a mat while dogs ran across green fields under grey skies "
         "and birds sang songs about rivers mountains cities people").split()


def write_mrpc(directory, seed=7):
  """Made-up MRPC files: pairs that are the same sentence (label 1) or not."""
  rng = random.Random(seed)
  directory.mkdir()
  header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
  for name, count in (("train", 48), ("dev", 40), ("test", 8)):
    lines = [header if name != "test" else "index\t#1 ID\t#2 ID\t#1 String\t#2 String\n"]
    for i in range(count):
      a = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 9)))
      same = rng.random() < 0.5
      b = a if same else " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 9)))
      first = i if name == "test" else int(same)
      lines.append("%s\t%d\t%d\t%s\t%s\n" % (first, 2 * i, 2 * i + 1, a, b))
    (directory / (name + ".tsv")).write_text("".join(lines), encoding="utf-8")


def tiny_mrpc_args(data):
  """A tiny BERT on write_mrpc's files."""
  return ["--task_name=MRPC", "--data_dir=%s" % data,
          "--vocab_file=" + data_file("vocab/bert_uncased_vocab.txt"),
          "--bert_config_file=" + CONFIG,
          "--init_checkpoint=" + data_file("eval_reference/model.ckpt"), "--max_seq_length=32"]


def run(script, args):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  return subprocess.run([sys.executable, script] + args, cwd=REPO_ROOT, capture_output=True,
                        text=True, timeout=900, env=env)


def results_of(path):
  return read_eval_results(path)


def test_grid_selects_by_the_task_metric_resumes_and_its_best_equals_a_single_run(tmp_path):
  data = tmp_path / "data"
  write_mrpc(data)
  common = tiny_mrpc_args(data) + ["--do_predict", "--save_checkpoints_steps=100"]
  grid_dir = tmp_path / "grid"
  grid_args = common + ["--grid_batch_sizes=8", "--grid_learning_rates=1e-3,3e-4",
                        "--grid_epochs=1", "--grid_restarts=2", "--output_dir=%s" % grid_dir]
  result = run("run_classifier_grid.py", grid_args)
  assert result.returncode == 0, result.stderr[-3000:]

  names = ["batch8_lr0.001_epochs1_restart0", "batch8_lr0.001_epochs1_restart1",
           "batch8_lr0.0003_epochs1_restart0", "batch8_lr0.0003_epochs1_restart1"]
  seeds = [12345, 12346, 12345, 12346]
  f1 = {n: float(results_of(grid_dir / "runs" / n / "eval_results.txt")["eval_f1"])
        for n in names}
  table = json.loads((grid_dir / "grid_results.json").read_text())
  assert table["metric"] == "eval_f1"  # MRPC is scored by F1.
  assert [r["run"] for r in table["runs"]] == names
  assert [r["seed"] for r in table["runs"]] == seeds
  assert [r["metric_value"] for r in table["runs"]] == [f1[n] for n in names]
  best = max(names, key=lambda n: (f1[n], -names.index(n)))  # The first of equals.
  assert table["best"] == best
  markdown = (grid_dir / "grid_results.md").read_text().splitlines()
  assert len(markdown) == 2 + len(names)
  assert [l for l in markdown if "(best)" in l] == [l for l in markdown if best in l]
  for name in ("eval_results.txt", "test_results.tsv", "MRPC.tsv"):
    assert (grid_dir / "best" / name).read_bytes() == (
        grid_dir / "runs" / best / name).read_bytes()

  # The best run is what run_classifier.py gives alone with its settings.
  setting = next(r for r in table["runs"] if r["run"] == best)
  single = tmp_path / "single"
  result = run("run_classifier.py", common + [
      "--do_train", "--do_eval", "--output_dir=%s" % single, "--train_batch_size=8",
      "--learning_rate=%r" % setting["learning_rate"], "--num_train_epochs=1",
      "--seed=%d" % setting["seed"]])
  assert result.returncode == 0, result.stderr[-3000:]
  alone, in_grid = results_of(single / "eval_results.txt"), results_of(grid_dir / "best" /
                                                                        "eval_results.txt")
  assert alone.keys() == in_grid.keys()
  for key in alone:
    assert abs(float(alone[key]) - float(in_grid[key])) <= 1e-6, key
  assert (single / "test_results.tsv").read_text() == (
      grid_dir / "best" / "test_results.tsv").read_text()

  # Again: finished runs are read back, an unfinished one (its results gone,
  # its checkpoint kept) completes, and the best run is exported.
  (grid_dir / "runs" / names[3] / "eval_results.txt").unlink()
  untouched = {n: os.stat(grid_dir / "runs" / n / "eval_results.txt").st_mtime_ns
               for n in names[:3]}
  export_dir = tmp_path / "export" / "1"
  result = run("run_classifier_grid.py", grid_args + ["--export_dir=%s" % export_dir])
  assert result.returncode == 0, result.stderr[-3000:]
  assert result.stderr.count("finished before") == 3
  assert {n: os.stat(grid_dir / "runs" / n / "eval_results.txt").st_mtime_ns
          for n in names[:3]} == untouched
  assert float(results_of(grid_dir / "runs" / names[3] / "eval_results.txt")["eval_f1"]) == (
      f1[names[3]])
  assert json.loads((grid_dir / "grid_results.json").read_text()) == table
  assert (export_dir / "saved_model.pb").exists()


def test_a_run_directory_of_other_settings_is_refused(tmp_path):
  data = tmp_path / "data"
  write_mrpc(data)
  run_dir = tmp_path / "grid" / "runs" / "batch8_lr0.001_epochs1_restart0"
  run_dir.mkdir(parents=True)
  (run_dir / "grid_setting.json").write_text(json.dumps({"seed": 1}))
  result = run("run_classifier_grid.py", [
      "--task_name=MRPC", "--data_dir=%s" % data, "--output_dir=%s" % (tmp_path / "grid"),
      "--vocab_file=" + data_file("vocab/bert_uncased_vocab.txt"), "--bert_config_file=" + CONFIG,
      "--grid_batch_sizes=8", "--grid_learning_rates=1e-3", "--grid_epochs=1"])
  assert result.returncode == 1
  line = result.stderr.strip().splitlines()[-1]
  assert line.startswith("run_classifier_grid.py: error: %s holds a run with other settings"
                         % run_dir), line


def test_eval_every_steps_keeps_the_best_dev_weights_and_stops_early(tmp_path):
  data = tmp_path / "data"
  write_mrpc(data)
  common = tiny_mrpc_args(data) + ["--train_batch_size=8", "--learning_rate=1e-3"]
  every = ["--do_train", "--do_eval", "--num_train_epochs=3", "--save_checkpoints_steps=2",
           "--keep_checkpoint_max=0", "--eval_every_steps=2"]  # 18 steps, 9 evaluations.
  full = tmp_path / "full"
  result = run("run_classifier.py", common + every + ["--output_dir=%s" % full])
  assert result.returncode == 0, result.stderr[-3000:]
  state = json.loads((full / "best" / "history.json").read_text())
  history = {int(s): v for s, v in state["history"].items()}
  assert state["metric"] == "eval_f1" and sorted(history) == list(range(2, 19, 2))
  assert len(set(history.values())) > 1  # The dev metric moved: the choice means something.
  best = min(s for s in history if history[s] == max(history.values()))
  assert state["best_step"] == best and state["stopped_at"] is None
  reported = results_of(full / "eval_results.txt")
  assert reported["global_step"] == str(best)

  # Those are the weights of that step: its own checkpoint, evaluated alone.
  alone = tmp_path / "alone"
  result = run("run_classifier.py", common + [
      "--do_eval", "--init_checkpoint=%s" % (full / ("ckpt-%d" % best)),
      "--output_dir=%s" % alone])
  assert result.returncode == 0, result.stderr[-3000:]
  alone_results = results_of(alone / "eval_results.txt")
  for key in ("eval_accuracy", "eval_f1", "eval_loss"):
    assert abs(float(alone_results[key]) - float(reported[key])) <= 1e-6, key
  assert abs(float(reported["eval_f1"]) - history[best]) <= 1e-6

  # Patience 2: training ends at the second evaluation in a row that is no
  # better than the best before it (the same run up to there: same seed).
  stop = next(s for s in sorted(history) if _evaluations_without_gain(history, s) >= 2)
  early = tmp_path / "early"
  args = common + every + ["--early_stopping_patience=2", "--output_dir=%s" % early]
  result = run("run_classifier.py", args)
  assert result.returncode == 0, result.stderr[-3000:]
  assert "Stopping early at step %d of 18" % stop in result.stderr
  state = json.loads((early / "best" / "history.json").read_text())
  assert state["stopped_at"] == stop and max(int(s) for s in state["history"]) == stop
  checkpoints = sorted(int(p.name[5:-6]) for p in early.glob("ckpt-*.index"))
  assert checkpoints[-1] == stop
  result = run("run_classifier.py", args)  # Again: it does not train on.
  assert result.returncode == 0, result.stderr[-3000:]
  assert "stopped early at step %d before" % stop in result.stderr
  assert sorted(int(p.name[5:-6]) for p in early.glob("ckpt-*.index")) == checkpoints


def _evaluations_without_gain(history, step):
  """Evaluations up to `step` since the best so far (the first of equals)."""
  seen = sorted(s for s in history if s <= step)
  best = max(seen, key=lambda s: (history[s], -s))
  return sum(1 for s in seen if s > best)


def test_head_initializer_flag_draws_the_new_head(tmp_path):
  """--head_initializer reaches the model: at learning rate 0 the trained
  head is its first draw, the one a model built with that initializer after
  the same seed holds (and the two initializers draw differently)."""
  import keras  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import modeling  # pylint: disable=g-import-not-at-top
  data = tmp_path / "data"
  write_mrpc(data)
  args = tiny_mrpc_args(data) + ["--do_train", "--learning_rate=0", "--train_batch_size=8",
                                 "--num_train_epochs=1", "--seed=5"]
  trained = {}
  for name in ("truncated_normal", "normal"):
    out = tmp_path / name
    result = run("run_classifier.py", args + ["--head_initializer=" + name,
                                              "--output_dir=%s" % out])
    assert result.returncode == 0, result.stderr[-3000:]
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(out)))
    [key] = [k for k in reader.get_variable_to_shape_map()
             if "classifier/output_weights" in k and "optimizer" not in k]
    trained[name] = reader.get_tensor(key)
    keras.utils.set_random_seed(5)
    model = modeling.BertClassifier(modeling.BertConfig.from_json_file(CONFIG), num_labels=2,
                                    head_initializer=name)
    np.testing.assert_array_equal(trained[name], model.classifier.output_weights.numpy())
  assert not np.array_equal(trained["truncated_normal"], trained["normal"])
