"""The paper's pre-training ablations in small: Table 5 and Figure 5 on 2 CPU cores.

  python -m bench.ablation                        # bundled corpus and pair task, ~23 min
  python -m bench.ablation --glue_dir=../shared/data/glue --tasks=SST-2,MRPC,RTE
  make ablation [ABLATION_ARGS="--glue_dir=..."]

One tiny BERT (2 layers, hidden 128) is pre-trained on one corpus, with one
vocabulary and one set of pre-training records, for the same number of steps
with each objective of `run_pretraining.py --pretraining_objective`:
  BERT (MLM + NSP)   mlm_nsp, the original;
  No NSP             mlm;
  LTR & No NSP       ltr, left to right (the causal mask is kept when
                     fine-tuning, as in the paper);
and a fourth model is not pre-trained at all. Each is fine-tuned with
`run_classifier.py` on every task (Table 5: dev accuracy per task); each
objective's intermediate checkpoints are fine-tuned on the first task
(Figure 5: dev accuracy against pre-training steps).

The corpus is the bundled King James Bible, plus, with --glue_dir, the
unlabeled text of the tasks' training files (the paper's corpus covers
GLUE's domains; the Bible alone does not); --corpus replaces both. Training
sets larger than --max_train_examples are cut to their first rows.

Every run is an ordinary command, logged in its directory under
--output_dir; a re-run skips the runs that finished. Writes ablation.json,
ablation.md and ablation.png there.
"""

import argparse
import json
import os
import subprocess
import sys
import time

from bench import common

REPO_ROOT = common.REPO_ROOT

from demo import corpus as demo_corpus  # pylint: disable=g-import-not-at-top
from demo import pairs as demo_pairs  # pylint: disable=g-import-not-at-top
from demo import report as demo_report  # pylint: disable=g-import-not-at-top
from tasks.classification import glue  # pylint: disable=g-import-not-at-top

# (objective, the paper's row name); None is the model with no pre-training.
MODELS = (("mlm_nsp", "BERT (MLM + NSP)"), ("mlm", "No NSP"),
          ("ltr", "LTR & No NSP"), (None, "No pre-training"))
PAIRS_TASK = "pairs"  # The bundled sentence-pair task (demo/pairs.py).

TINY_CONFIG = dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
                   intermediate_size=512, hidden_act="gelu", hidden_dropout_prob=0.1,
                   attention_probs_dropout_prob=0.1, max_position_embeddings=512,
                   type_vocab_size=2, initializer_range=0.02)


def _log(message):
  print(message, flush=True)


def run_command(args, log_path):
  """Runs one of the project's commands, its output in `log_path`; stops the
  ablation with the log's tail if it fails."""
  os.makedirs(os.path.dirname(log_path), exist_ok=True)
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  start = time.time()
  with open(log_path, "w", encoding="utf-8") as log:
    log.write("$ %s\n" % " ".join(["python"] + args))
    log.flush()
    code = subprocess.call([sys.executable] + args, cwd=REPO_ROOT, stdout=log,
                           stderr=subprocess.STDOUT, env=env)
  if code:
    with open(log_path, encoding="utf-8") as log:
      tail = log.read()[-2000:]
    sys.exit("%s\nFailed (exit %d): %s\nLog: %s" % (tail, code, " ".join(args), log_path))
  return time.time() - start


def read_results(path):
  with open(path, encoding="utf-8") as f:
    return {k: float(v) for k, v in (line.strip().split(" = ", 1) for line in f if " = " in line)}


def step_counts(total, points):
  """Up to `points` pre-training step counts ending at `total`, each double
  the one before (Figure 5's axis is roughly logarithmic too); all but the
  last are multiples of the first, so one checkpoint interval saves them."""
  first = max(1, total >> (points - 1))
  return sorted({first << i for i in range(points - 1) if first << i < total} | {total})


def write_corpus(path, task_dirs):
  """The bundled corpus, then each task's unlabeled training text (ten
  examples to a document, one text per line)."""
  demo_corpus.write_kjv_corpus(path)
  with open(path, "a", encoding="utf-8") as out:
    for task, data_dir in task_dirs.items():
      if task == PAIRS_TASK:
        continue
      examples = glue.get_processor(task).get_train_examples(data_dir)
      for i in range(0, len(examples), 10):
        out.write("\n")
        for example in examples[i:i + 10]:
          for text in (example.text_a, example.text_b):
            if text and text.strip():
              out.write(" ".join(text.split()) + "\n")


def task_data(task, glue_dir, work_dir, max_train_examples):
  """The data_dir run_classifier.py reads for `task`: the GLUE directory, or
  a copy whose train.tsv keeps its header and first --max_train_examples rows."""
  source = os.path.join(glue_dir, task)
  count = len(glue.get_processor(task).get_train_examples(source))
  if count <= max_train_examples:
    return source
  target = os.path.join(work_dir, "tasks", task)
  os.makedirs(target, exist_ok=True)
  with open(os.path.join(source, "train.tsv"), encoding="utf-8") as f:
    lines = f.readlines()
  header = len(lines) - count  # Rows the processor does not read as examples.
  with open(os.path.join(target, "train.tsv"), "w", encoding="utf-8") as f:
    f.writelines(lines[:header + max_train_examples])
  for name in os.listdir(source):
    if name != "train.tsv" and not os.path.exists(os.path.join(target, name)):
      os.symlink(os.path.abspath(os.path.join(source, name)), os.path.join(target, name))
  return target


def prepare(args):
  """Corpus, vocabulary, records and the two configs; returns paths."""
  work = args.output_dir
  os.makedirs(work, exist_ok=True)
  if args.glue_dir:
    tasks = {t: task_data(t, args.glue_dir, work, args.max_train_examples)
             for t in args.tasks.split(",")}
  else:
    tasks = {PAIRS_TASK: os.path.join(work, "pairs")}
    if not os.path.exists(os.path.join(tasks[PAIRS_TASK], "dev.tsv")):
      demo_pairs.write_task(tasks[PAIRS_TASK], train=args.max_train_examples)
  corpus = args.corpus or os.path.join(work, "corpus.txt")
  if not args.corpus and not os.path.exists(corpus):
    _log("==> Writing the corpus to %s" % corpus)
    write_corpus(corpus, tasks)
  vocab = args.vocab_file or os.path.join(work, "vocab.txt")
  if not os.path.exists(vocab):
    _log("==> Learning a %d-token vocabulary" % args.vocab_size)
    run_command(["learn_vocab.py", "--input_file=" + corpus, "--output_file=" + vocab,
                 "--vocab_size=%d" % args.vocab_size], os.path.join(work, "logs", "vocab.log"))
  records = os.path.join(work, "pretraining_data.tfrecord")
  if not os.path.exists(records):
    _log("==> Writing masked-LM + next-sentence records (all objectives read these)")
    run_command(["create_pretraining_data.py", "--input_file=" + corpus,
                 "--output_file=" + records, "--vocab_file=" + vocab,
                 "--max_seq_length=%d" % args.max_seq_length,
                 "--max_predictions_per_seq=%d" % args.max_predictions_per_seq,
                 "--dupe_factor=%d" % args.dupe_factor, "--random_seed=%d" % args.seed],
                os.path.join(work, "logs", "records.log"))
  with open(vocab, encoding="utf-8") as f:
    vocab_size = sum(1 for _ in f)
  configs = {}
  for causal in (False, True):
    values = dict(TINY_CONFIG, vocab_size=vocab_size)
    if causal:
      values["causal_attention"] = True
    path = os.path.join(work, "bert_config%s.json" % ("_causal" if causal else ""))
    with open(path, "w", encoding="utf-8") as f:
      json.dump(values, f, indent=2, sort_keys=True)
    configs[causal] = path
  return dict(tasks=tasks, vocab=vocab, records=records, configs=configs)


def pretrain(args, paths, objective, steps):
  """Pre-trains with `objective`, keeping a checkpoint at every step count."""
  out = os.path.join(args.output_dir, "pretraining", objective)
  if os.path.exists(os.path.join(out, "eval_results.txt")):
    return read_results(os.path.join(out, "eval_results.txt")), 0.0
  seconds = run_command([
      "run_pretraining.py", "--input_file=" + paths["records"], "--output_dir=" + out,
      "--do_train", "--do_eval", "--pretraining_objective=" + objective,
      "--bert_config_file=" + paths["configs"][objective == "ltr"],
      "--train_batch_size=%d" % args.train_batch_size,
      "--max_seq_length=%d" % args.max_seq_length,
      "--max_predictions_per_seq=%d" % args.max_predictions_per_seq,
      "--num_train_steps=%d" % args.pretrain_steps,
      "--num_warmup_steps=%d" % (args.pretrain_steps // 20),
      "--learning_rate=%g" % args.pretrain_learning_rate,
      "--save_checkpoints_steps=%d" % steps[0], "--keep_checkpoint_max=0",
      "--iterations_per_loop=%d" % steps[0], "--max_eval_steps=20", "--eval_batch_size=32",
      "--seed=%d" % args.seed], os.path.join(out, "run.log"))
  return read_results(os.path.join(out, "eval_results.txt")), seconds


def task_name(task):
  """The --task_name that reads `task`'s files (the bundled pairs: MRPC's format)."""
  return "MRPC" if task == PAIRS_TASK else task


def fine_tune(args, paths, objective, step, task):
  """(dev accuracy, attempts) of the model pre-trained `step` steps with
  `objective` (None: not pre-trained), fine-tuned on `task`.

  A fine-tuning run that learned nothing (its last training loss above
  demo.report.STUCK_SHARE of the training labels' entropy; training data
  only) is run again with the next seed (another classifier initialisation,
  dropout and data order), up to --fine_tune_restarts times, for every model
  alike: at this size some seeds leave every model, pre-trained or not, at
  the majority class (docs/ablations.md). The last run counts."""
  name = "none" if objective is None else "%s_%d" % (objective, step)
  attempts = []
  for restart in range(args.fine_tune_restarts + 1):
    seed = args.seed + restart
    out = os.path.join(args.output_dir, "fine_tuning", task,
                       name if not restart else "%s_seed%d" % (name, seed))
    accuracy = fine_tuning_run(args, paths, objective, step, task, seed, out)
    last, entropy, stuck = demo_report.fine_tuning_stuck(task_name(task), paths["tasks"][task],
                                                         out)
    attempts.append({"seed": seed, "accuracy": accuracy, "training_loss": last,
                     "label_entropy": entropy, "stuck": stuck})
    if not stuck:
      break
    _log("    learned nothing (training loss %.3f, the labels' entropy %.3f)%s" % (
        last, entropy, ": again with --seed=%d" % (seed + 1)
        if restart < args.fine_tune_restarts else "; no restarts left"))
  return accuracy, attempts


def fine_tuning_run(args, paths, objective, step, task, seed, out):
  """One run_classifier.py run (unless done before); its dev accuracy."""
  results_path = os.path.join(out, "eval_results.txt")
  if not os.path.exists(results_path):
    command = [
        "run_classifier.py", "--task_name=" + task_name(task),
        "--do_train", "--do_eval", "--data_dir=" + paths["tasks"][task],
        "--vocab_file=" + paths["vocab"], "--output_dir=" + out,
        "--bert_config_file=" + paths["configs"][objective == "ltr"],
        "--max_seq_length=%d" % args.max_seq_length,
        "--train_batch_size=%d" % args.train_batch_size,
        "--learning_rate=%g" % args.fine_tune_learning_rate,
        "--num_train_epochs=%g" % args.num_train_epochs, "--eval_batch_size=64",
        "--iterations_per_loop=100", "--save_checkpoints_steps=100000",
        "--seed=%d" % seed]
    if objective is not None:
      command.append("--init_checkpoint=" + os.path.join(
          args.output_dir, "pretraining", objective, "ckpt-%d" % step))
    run_command(command, os.path.join(out, "run.log"))
  return read_results(results_path)["eval_accuracy"]


def table(scores, tasks):
  """Table 5's shape: a row per pre-training, dev accuracy (%) per task."""
  lines = ["| Pre-training | " + " | ".join(tasks) + " |",
           "|---|" + "---:|" * len(tasks)]
  for name in [n for _, n in MODELS if n in scores]:
    lines.append("| %s | %s |" % (name, " | ".join(
        "%.1f" % (100 * scores[name][t]) for t in tasks)))
  return "\n".join(lines)


def restarts_line(restarts):
  """Which fine-tuning runs were run again, and why."""
  rule = ("A fine-tuning run whose last training loss stays above %.0f%% of the training "
          "labels' entropy learned nothing and is run again with the next seed (at most "
          "--fine_tune_restarts times); the last run counts." % (100 * demo_report.STUCK_SHARE))
  if not restarts:
    return rule + " No run needed it."
  return rule + " Run again: " + "; ".join(restarts) + "."


def curve_table(curves, steps, task):
  """Figure 5 as numbers: dev accuracy (%) on `task` after each step count."""
  lines = ["| Pre-training steps | " + " | ".join(curves) + " |",
           "|---:|" + "---:|" * len(curves)]
  for step in [0] + steps:
    lines.append("| %d | %s |" % (step, " | ".join(
        "%.1f" % (100 * curves[name][str(step)]) for name in curves)))
  return "\n".join(lines) + "\n\n(Dev accuracy on %s; step 0 is the model with no pre-training.)" % task


def plot(curves, scores, tasks, steps, path):
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
  names = [name for _, name in MODELS if name in scores]
  width = 0.8 / len(names)
  for i, name in enumerate(names):
    left.bar([t + i * width for t in range(len(tasks))],
             [100 * scores[name][t] for t in tasks], width, label=name)
  left.set_xticks([t + width * (len(names) - 1) / 2 for t in range(len(tasks))])
  left.set_xticklabels(tasks)
  left.set_ylabel("dev accuracy (%)")
  left.set_title("Table 5: pre-training tasks")
  left.set_ylim(0, 125)
  left.legend(fontsize=8, loc="upper center", ncol=2)
  for name, values in curves.items():
    right.plot([0] + steps, [100 * values[str(s)] for s in [0] + steps], marker="o", label=name)
  right.set_xlabel("pre-training steps")
  right.set_ylabel("dev accuracy on %s (%%)" % tasks[0])
  right.set_title("Figure 5: pre-training steps")
  right.legend(fontsize=8)
  figure.tight_layout()
  common.save_png(figure, path, dpi=100)


def parse_args(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--output_dir", default=os.path.join(REPO_ROOT, "bench", "output",
                                                           "ablation"))
  parser.add_argument("--glue_dir", default=None,
                      help="GLUE data (one directory per task); default: the bundled pair task.")
  parser.add_argument("--tasks", default="SST-2,MRPC,RTE",
                      help="With --glue_dir: the tasks; Figure 5 uses the first.")
  parser.add_argument("--corpus", default=None, help="Pre-training text (see above).")
  parser.add_argument("--vocab_file", default=None, help="Default: learned from the corpus.")
  parser.add_argument("--vocab_size", type=int, default=8000)
  parser.add_argument("--max_seq_length", type=int, default=64)
  parser.add_argument("--max_predictions_per_seq", type=int, default=10)
  parser.add_argument("--dupe_factor", type=int, default=3)
  parser.add_argument("--pretrain_steps", type=int, default=1500)
  parser.add_argument("--curve_points", type=int, default=3,
                      help="Pre-training step counts in Figure 5 (halving from the last).")
  parser.add_argument("--pretrain_learning_rate", type=float, default=5e-4)
  parser.add_argument("--train_batch_size", type=int, default=32)
  parser.add_argument("--fine_tune_learning_rate", type=float, default=2e-4)
  parser.add_argument("--num_train_epochs", type=float, default=2.0)
  parser.add_argument("--max_train_examples", type=int, default=4000)
  parser.add_argument("--seed", type=int, default=12345)
  parser.add_argument("--fine_tune_restarts", type=int, default=2,
                      help="Run a fine-tuning run that learned nothing (training loss near "
                           "the labels' entropy) again with the next seed, up to this many "
                           "times; 0: never.")
  parser.add_argument("--objectives", default=",".join(o for o, _ in MODELS[:-1]),
                      help="The pre-training objectives to run (the model without "
                           "pre-training always runs).")
  args = parser.parse_args(argv)
  unknown = set(args.objectives.split(",")) - {o for o, _ in MODELS[:-1]}
  if unknown:
    parser.error("--objectives: unknown %s." % ", ".join(sorted(unknown)))
  if args.glue_dir:
    for task in args.tasks.split(","):
      if not os.path.isdir(os.path.join(args.glue_dir, task)):
        parser.error("--glue_dir=%s has no directory %s (from --tasks)." % (args.glue_dir, task))
  if args.pretrain_steps < 1 or args.curve_points < 1:
    parser.error("--pretrain_steps and --curve_points must be positive.")
  return args


def main(argv=None):
  args = parse_args(argv)
  start = time.time()
  paths = prepare(args)
  tasks = list(paths["tasks"])
  steps = step_counts(args.pretrain_steps, args.curve_points)
  models = [(o, n) for o, n in MODELS if o is None or o in args.objectives.split(",")]
  pretraining = {}
  for objective, name in models[:-1]:
    _log("==> Pre-training %s (--pretraining_objective=%s), %d steps" % (
        name, objective, args.pretrain_steps))
    results, seconds = pretrain(args, paths, objective, steps)
    pretraining[name] = dict(results, seconds=round(seconds, 1))
    _log("    masked_lm_accuracy %.3f%s" % (results["masked_lm_accuracy"],
                                            "" if objective != "ltr" else " (next token)"))
  scores = {name: {} for _, name in models}
  curves = {name: {} for _, name in models[:-1]}
  runs = [(o, n, args.pretrain_steps, t) for o, n in models for t in tasks]
  runs += [(o, n, s, tasks[0]) for o, n in models[:-1] for s in steps[:-1]]
  restarts = []  # The fine-tuning runs that learned nothing and were run again.
  for i, (objective, name, step, task) in enumerate(runs):
    began = time.time()
    accuracy, attempts = fine_tune(args, paths, objective, step, task)
    if len(attempts) > 1:
      restarts.append("%s%s on %s, after %s" % (
          name, "" if objective is None else " at step %d" % step, task, ", ".join(
              "seed %d (training loss %.3f, entropy %.3f)" % (
                  a["seed"], a["training_loss"], a["label_entropy"]) for a in attempts[:-1])))
    if step == args.pretrain_steps:
      scores[name][task] = accuracy
    if task == tasks[0] and objective is not None:
      curves[name][str(step)] = accuracy
    _log("==> [%d/%d] %s%s on %s: dev accuracy %.3f (%.0f s)" % (
        i + 1, len(runs), name, "" if objective is None else " at step %d" % step, task,
        accuracy, time.time() - began))
  for name in curves:
    curves[name]["0"] = scores["No pre-training"][tasks[0]]
  report = ("## Pre-training ablations (Table 5 shape)\n\n%s\n\n%s\n\n"
            "## Dev accuracy against pre-training steps (Figure 5 shape)\n\n%s\n" % (
                table(scores, tasks), restarts_line(restarts),
                curve_table(curves, steps, tasks[0])))
  summary = dict(tasks=tasks, steps=steps, scores=scores, curves=curves, restarts=restarts,
                 pretraining=pretraining, settings=vars(args),
                 minutes=round((time.time() - start) / 60, 1))
  common.write_text(os.path.join(args.output_dir, "ablation.json"),
                    json.dumps(summary, indent=2) + "\n")
  common.write_text(os.path.join(args.output_dir, "ablation.md"), report)
  plot(curves, scores, tasks, steps, os.path.join(args.output_dir, "ablation.png"))
  _log("\n" + report)
  _log("Wrote ablation.json, ablation.md and ablation.png in %s (%.1f min)." % (
      args.output_dir, (time.time() - start) / 60))


if __name__ == "__main__":
  main()
