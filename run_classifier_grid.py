"""Fine-tunes a GLUE task as the BERT paper did: a grid of batch sizes,
learning rates and epochs, random restarts, the best run chosen on dev.

  python run_classifier_grid.py --task_name=MRPC --data_dir=glue_data/MRPC \\
    --vocab_file=uncased_L-12_H-768_A-12/vocab.txt \\
    --bert_config_file=uncased_L-12_H-768_A-12/bert_config.json \\
    --init_checkpoint=uncased_L-12_H-768_A-12/bert_model.ckpt \\
    --max_seq_length=128 --grid_restarts=5 --do_predict --output_dir=/tmp/mrpc_grid/

Every run_classifier.py flag is taken and given to each run (your own files,
--train_file and the rest, instead of --task_name and --data_dir too); the grid sets
--train_batch_size, --learning_rate, --num_train_epochs, --seed (--seed plus
the restart's number) and --output_dir (<output_dir>/runs/<run>) per run.
Selection is by the task's GLUE metric on dev: Spearman correlation (STS-B),
Matthews correlation (CoLA), F1 (MRPC, QQP), accuracy (the others).
Writes grid_results.md and grid_results.json (every run), best/ (the best
run's eval_results.txt, test_results.tsv and submission file) and, with
--export_dir, the best run's SavedModel. Re-running the same command skips
finished runs and continues an interrupted one from its checkpoints.
"""

import os
import subprocess
import sys

from absl import flags
from absl import logging

from plumbing import startup  # noqa: F401  (first: loads TensorFlow, see its docstring)
from plumbing import cli
from plumbing.errors import UserError
import run_classifier
from tasks.classification import grid
from tasks.classification import outputs

FLAGS = flags.FLAGS

flags.DEFINE_list("grid_batch_sizes", ["16", "32"], "Training batch sizes to try.")
flags.DEFINE_list("grid_learning_rates", ["5e-5", "3e-5", "2e-5"], "Learning rates to try.")
flags.DEFINE_list("grid_epochs", ["2", "3", "4"], "Numbers of training epochs to try.")
flags.DEFINE_integer("grid_restarts", 1,
                     "Runs per setting, each with its own seed (--seed, --seed + 1, ...): "
                     "another classifier initialisation, dropout and data order. The paper "
                     "restarts several times on small data sets.")

# What the grid sets for each run; the rest of the command line is passed on.
_PER_RUN = {"train_batch_size", "learning_rate", "num_train_epochs", "seed", "output_dir",
            "do_train", "do_eval", "export_dir", "flagfile", "start_over"}


def _values(name, kind):
  values = []
  for text in getattr(FLAGS, name):
    try:
      value = kind(text)
    except ValueError:
      value = 0
    if value <= 0:
      raise UserError("--%s: %r is not a positive number." % (name, text))
    values.append(value)
  if not values:
    raise UserError("--%s is empty: give at least one value." % name)
  return values


def _passed_flags(leave_out=()):
  """The flags given on the command line, as each run gets them."""
  skip = _PER_RUN | set(leave_out)
  return sorted({FLAGS[name].serialize() for name in FLAGS.flag_values_dict()
                 if FLAGS[name].present and FLAGS[name].name not in skip
                 and not FLAGS[name].name.startswith("grid_")})


def _run_classifier(args, what):
  status = subprocess.call([sys.executable, os.path.abspath(run_classifier.__file__)] + args)
  if status:
    raise UserError("%s: run_classifier.py stopped with exit status %d (its messages are "
                    "above); run the same command again to continue." % (what, status))


def main(_):
  logging.set_verbosity(logging.INFO)
  if not FLAGS.output_dir:
    raise UserError("--output_dir is required: each run gets a directory under it.")
  runs = grid.settings(_values("grid_batch_sizes", int), _values("grid_learning_rates", float),
                       _values("grid_epochs", float), FLAGS.grid_restarts)
  expected = ["eval_results.txt"] + (["test_results.tsv"] if FLAGS.do_predict else [])
  rows = []
  for number, setting in enumerate(runs, 1):
    name = grid.run_name(setting)
    run_dir = os.path.join(FLAGS.output_dir, "runs", name)
    seed = FLAGS.seed + setting.restart
    grid.claim(run_dir, setting, seed)
    if grid.finished(run_dir, expected):
      logging.info("Run %d of %d, %s: finished before.", number, len(runs), name)
    else:
      logging.info("Run %d of %d, %s.", number, len(runs), name)
      _run_classifier(_passed_flags() + [
          "--do_train", "--do_eval", "--output_dir=" + run_dir,
          "--train_batch_size=%d" % setting.train_batch_size,
          "--learning_rate=%r" % setting.learning_rate,
          "--num_train_epochs=%r" % setting.num_train_epochs, "--seed=%d" % seed], name)
    results = grid.read_eval_results(os.path.join(run_dir, "eval_results.txt"))
    metric = outputs.glue_metric(results)
    rows.append(dict(setting._asdict(), run=name, seed=seed, metric=metric,
                     metric_value=results[metric], results=results))
    logging.info("  %s = %.4f", metric, results[metric])

  best = grid.best(rows)
  grid.write_tables(FLAGS.output_dir, rows, best)
  best_run = os.path.join(FLAGS.output_dir, "runs", best["run"])
  copied = grid.copy_best(best_run, os.path.join(FLAGS.output_dir, "best"))
  logging.info("Best run: %s, %s = %.4f; %s copied to %s. Every run: %s", best["run"],
               best["metric"], best["metric_value"], ", ".join(copied),
               os.path.join(FLAGS.output_dir, "best"),
               os.path.join(FLAGS.output_dir, "grid_results.md"))
  if FLAGS.export_dir:
    _run_classifier(_passed_flags(leave_out={"do_predict"}) + [
        "--output_dir=" + best_run, "--export_dir=" + FLAGS.export_dir], "export")


def cli_main():
  """The command line (also the installed command's entry point)."""
  for name in ("vocab_file", "bert_config_file", "output_dir"):
    flags.mark_flag_as_required(name)
  cli.run(main)


if __name__ == "__main__":
  cli_main()
