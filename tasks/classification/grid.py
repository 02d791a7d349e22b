"""The paper's fine-tuning protocol: a grid of batch sizes, learning rates and
epoch counts, each run with a few random restarts, the best kept by the
task's dev metric.

Every run is a whole run_classifier.py run in a directory of its own, so a
killed grid continues where it stopped: finished runs are read back, an
interrupted one resumes from its checkpoints. Epoch counts are separate
runs: the paper's schedule warms up over the first 10% of each run's steps
and decays to zero at its end, so evaluating a 4-epoch run after 2 epochs
would not give the 2-epoch run's result.
"""

import collections
import itertools
import json
import os

from plumbing import files
from plumbing.errors import UserError

Setting = collections.namedtuple(
    "Setting", ["train_batch_size", "learning_rate", "num_train_epochs", "restart"])

SETTING_FILE = "grid_setting.json"


def settings(batch_sizes, learning_rates, epochs, restarts):
  """Every run of the grid, in the order they run."""
  return [Setting(b, lr, e, r) for b, lr, e, r in
          itertools.product(batch_sizes, learning_rates, epochs, range(restarts))]


def run_name(setting):
  return "batch%d_lr%g_epochs%g_restart%d" % setting


def read_eval_results(path):
  """eval_results.txt as a dict of floats ("key = value" lines)."""
  results = {}
  for line in files.read_text(path).splitlines():
    key, _, value = line.strip().partition(" = ")
    results[key] = float(value)
  return results


def claim(run_dir, setting, seed):
  """Marks `run_dir` as the run of `setting`; refuses one holding another."""
  wanted = dict(setting._asdict(), seed=seed)
  path = os.path.join(run_dir, SETTING_FILE)
  if files.exists(path):
    found = files.read_json(path)
    if found != wanted:
      raise UserError("%s holds a run with other settings (%s); remove that directory or "
                      "choose another --output_dir." % (run_dir, found))
    return
  files.makedirs(run_dir)
  files.write_text(path, json.dumps(wanted, sort_keys=True) + "\n")


def finished(run_dir, expected_files):
  return all(files.exists(os.path.join(run_dir, name)) for name in expected_files)


def best(rows):
  """The row with the highest metric (the first such, in grid order)."""
  return max(rows, key=lambda row: row["metric_value"])


def table_markdown(rows, best_row):
  metric = best_row["metric"]
  lines = ["| run | batch | learning rate | epochs | restart | seed | %s | eval_loss |" % metric,
           "|---|---:|---:|---:|---:|---:|---:|---:|"]
  for row in rows:
    lines.append("| %s%s | %d | %g | %g | %d | %d | %.4f | %.4f |" % (
        row["run"], " (best)" if row is best_row else "", row["train_batch_size"],
        row["learning_rate"], row["num_train_epochs"], row["restart"], row["seed"],
        row["metric_value"], row["results"].get("eval_loss", float("nan"))))
  return "\n".join(lines) + "\n"


def write_tables(output_dir, rows, best_row):
  """grid_results.md and grid_results.json in `output_dir`."""
  files.write_text(os.path.join(output_dir, "grid_results.md"), table_markdown(rows, best_row))
  files.write_text(os.path.join(output_dir, "grid_results.json"), json.dumps(
      {"metric": best_row["metric"], "best": best_row["run"], "runs": rows},
      indent=2, sort_keys=True) + "\n")


def copy_best(run_dir, best_dir):
  """The best run's results files (eval_results.txt, labels.txt,
  test_results.tsv and the GLUE submission file) into `best_dir`; returns
  their names."""
  files.makedirs(best_dir)
  names = sorted(n for n in files.list_directory(run_dir)
                 if n in ("eval_results.txt", files.LABELS_FILE) or n.endswith(".tsv"))
  for name in names:
    data = files.read_bytes(os.path.join(run_dir, name))
    with files.atomic_output(os.path.join(best_dir, name), "wb") as f:
      f.write(data)
  return names
