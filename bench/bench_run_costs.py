"""How long, how much memory and how much disk the runs users start take on
this machine: each row runs whole commands as a user types them and writes
what it measured to docs/benchmarks/run_costs.md and .json.

  python -m bench.bench_run_costs [--rows=demo,quick_start,epoch,pretrain_128,pretrain_512]

Rows:
  demo          `make demo`: the whole pipeline on the bundled corpus, a tiny model.
  quick_start   the README's Quick start on MRPC with BERT-Base: fine-tune and
                evaluate (3 epochs, batch 32, length 128), predict and export,
                query the export. The weights start random (no released
                checkpoint here): the time and size are a checkpoint's.
  epoch         one fine-tuning epoch of BERT-Base on a GLUE task (RTE), as
                run_classifier.py runs it by default.
  pretrain_128  BERT-Base pre-training steps at length 128, batch 32.
  pretrain_512  BERT-Base pre-training steps at length 512, batch 8.
Time is wall time, memory the peak proportional set size of the command's
processes, disk what the command leaves in its output directories. The
pre-training rows also give seconds per step, the median over steps after
the first (which compiles).
"""

import argparse
import datetime
import json
import os
import re
import resource
import shlex
import shutil
import statistics
import sys
import tempfile

from bench import common

ROWS = ("demo", "quick_start", "epoch", "pretrain_128", "pretrain_512")
BASE_CONFIG = os.path.join(common.SHARED_DATA, "bert_configs",
                           "uncased_L-12_H-768_A-12.bert_config.json")
PAGE = os.path.join(common.REPO_ROOT, "docs", "benchmarks", "run_costs")
# How often a command's memory is read: reading a large process's
# proportional set size takes CPU time from the command measured.
_POLL_SECONDS = 1.0
# Masked positions per sequence at each length: the original README's.
MAX_PREDICTIONS = {128: 20, 512: 80}


def _parser():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--rows", default=",".join(ROWS))
  parser.add_argument("--bert_config_file", default=BASE_CONFIG)
  parser.add_argument("--vocab_file", default=common.VOCAB)
  parser.add_argument("--glue_dir", default=os.path.join(common.SHARED_DATA, "glue"))
  parser.add_argument("--quick_start_epochs", type=float, default=3.0)
  parser.add_argument("--epoch_task", default="RTE")
  parser.add_argument("--pretrain_steps", type=int, default=8)
  parser.add_argument("--corpus_mb", type=float, default=1.0,
                      help="The pre-training rows' corpus (real English: bench/common.py).")
  parser.add_argument("--output", default=PAGE,
                      help="Where the page goes, without .md / .json.")
  return parser


def _disk(*paths):
  """Bytes under `paths` (files or directories)."""
  total = 0
  for path in paths:
    if os.path.isfile(path):
      total += os.path.getsize(path)
    for directory, _, names in os.walk(path):
      total += sum(os.path.getsize(os.path.join(directory, n)) for n in names
                   if os.path.isfile(os.path.join(directory, n)))
  return total


class _Row(object):
  """The commands of one row, each measured; the sums are the row's."""

  def __init__(self, key, what, scratch):
    self.key, self.what, self.scratch = key, what, scratch
    self.commands = []

  def run(self, label, command, cwd=common.REPO_ROOT):
    log = os.path.join(self.scratch, "%s-%d.log" % (self.key, len(self.commands)))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    print("%s: %s" % (self.key, shlex.join(command)), flush=True)
    busy, own = common.busy_cpu_seconds(), _own_cpu_seconds()
    seconds, megabytes = common.run_measured(command, cwd, log, env=env, every=_POLL_SECONDS)
    others = None
    if busy is not None:
      # What the machine's CPUs did that neither this command nor the
      # measuring did: other work.
      others = max(0.0, (common.busy_cpu_seconds() - busy) - (_own_cpu_seconds() - own))
    with open(log, encoding="utf-8", errors="replace") as f:
      text = f.read()
    self.commands.append({"label": label, "command": shlex.join(command), "seconds": seconds,
                          "peak_mb": megabytes, "other_cpu_seconds": others})
    print("  %.1f s, peak %.0f MB, %s CPU-seconds of other work" % (
        seconds, megabytes, "?" if others is None else "%.0f" % others), flush=True)
    return text

  def result(self, disk_paths, **extra):
    others = [c["other_cpu_seconds"] for c in self.commands]
    return dict(key=self.key, what=self.what, commands=self.commands,
                other_cpu_seconds=None if None in others else sum(others),
                seconds=sum(c["seconds"] for c in self.commands),
                peak_mb=max(c["peak_mb"] for c in self.commands),
                disk_mb=_disk(*disk_paths) / 1e6, **extra)


def _own_cpu_seconds():
  """CPU seconds of this process (its memory polling) and of its finished
  children and their descendants (the commands)."""
  return sum(usage.ru_utime + usage.ru_stime for usage in (
      resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)))


def _python(script):
  return [sys.executable, script]


def demo(args, scratch):
  del args
  row = _Row("demo", "`make demo`: vocabulary, pre-training data, a tiny BERT pre-trained "
             "(2,000 steps) and fine-tuned, exported and queried", scratch)
  out = os.path.join(scratch, "demo_output")
  row.run("make demo", ["make", "demo", "DEMO_DIR=" + out])
  return row.result([out])


def _classifier_flags(args, task, out):
  return ["--task_name=" + task, "--data_dir=" + os.path.join(args.glue_dir, task),
          "--vocab_file=" + args.vocab_file, "--bert_config_file=" + args.bert_config_file,
          "--max_seq_length=128", "--output_dir=" + out]


def quick_start(args, scratch):
  row = _Row("quick_start", "the README's Quick start: MRPC on BERT-Base (random initial "
             "weights), %g epochs of batch 32 at length 128, evaluation, prediction on the "
             "test set, export, one query" % args.quick_start_epochs, scratch)
  out, export = os.path.join(scratch, "mrpc_output"), os.path.join(scratch, "mrpc_export", "1")
  flags = _classifier_flags(args, "MRPC", out)
  row.run("fine-tune and evaluate", _python("run_classifier.py") + flags + [
      "--do_train=true", "--do_eval=true", "--train_batch_size=32", "--learning_rate=2e-5",
      "--num_train_epochs=%g" % args.quick_start_epochs])
  row.run("predict and export", _python("run_classifier.py") + flags + [
      "--do_predict=true", "--export_dir=" + export])
  row.run("query the export", _python("query.py") + [
      "--export_dir=" + export, "--text_a=The cat sat on the mat.",
      "--text_b=A cat was sitting on the mat."])
  return row.result([out, os.path.dirname(export)])


def epoch(args, scratch):
  task = args.epoch_task
  row = _Row("epoch", "one fine-tuning epoch of BERT-Base on %s (random initial weights), "
             "batch 32, length 128, run_classifier.py's defaults" % task, scratch)
  out = os.path.join(scratch, "epoch_output")
  log = row.run("train one epoch", _python("run_classifier.py") + _classifier_flags(
      args, task, out) + ["--do_train=true", "--train_batch_size=32", "--num_train_epochs=1"])
  steps = re.findall(r"Num steps = (\d+)", log)
  return row.result([out], steps=int(steps[0]) if steps else None)


def _pretraining_data(args, scratch, length):
  """Records at `length` from real English whose documents fill it."""
  corpus = os.path.join(scratch, "corpus.txt")
  if not os.path.exists(corpus):
    common.build_corpus(corpus, args.corpus_mb)
  records = os.path.join(scratch, "pretraining_%d.tfrecord" % length)
  if not os.path.exists(records):
    common.run_measured(_python("create_pretraining_data.py") + [
        "--input_file=" + corpus, "--output_file=" + records, "--vocab_file=" + args.vocab_file,
        "--max_seq_length=%d" % length, "--max_predictions_per_seq=%d" % MAX_PREDICTIONS[length],
        "--dupe_factor=1"], common.REPO_ROOT, records + ".log")
  return records


def pretrain(args, scratch, length, batch):
  key = "pretrain_%d" % length
  row = _Row(key, "BERT-Base pre-training (masked LM + next sentence, AdamW), length %d, "
             "batch %d, %d steps" % (length, batch, args.pretrain_steps), scratch)
  out = os.path.join(scratch, key)
  log = row.run("pre-train", _python("run_pretraining.py") + [
      "--input_file=" + _pretraining_data(args, scratch, length), "--output_dir=" + out,
      "--do_train", "--bert_config_file=" + args.bert_config_file,
      "--train_batch_size=%d" % batch, "--max_seq_length=%d" % length,
      "--max_predictions_per_seq=%d" % MAX_PREDICTIONS[length], "--pad_to_max_seq_length=true",
      "--num_train_steps=%d" % args.pretrain_steps, "--num_warmup_steps=1",
      "--iterations_per_loop=1", "--save_checkpoints_steps=%d" % args.pretrain_steps])
  rates = [float(r) for r in re.findall(r"step \d+/\d+: loss = .*?, ([0-9.]+) examples/s", log)]
  per_step = statistics.median(batch / r for r in rates[1:]) if len(rates) > 1 else None
  return row.result([out], seconds_per_step=per_step, batch_size=batch, length=length)


def _markdown(results, machine):
  dates = sorted({r["date"] for r in results})
  lines = ["# What runs cost: time, memory and disk", "",
           "Made by `python -m bench.bench_run_costs` on %s: %s (%s), %d cores, %s GB; %s, "
           "Python %s. Each figure is one run of the commands below (a row run again alone, "
           "`--rows=<key>`, replaces its line). Other work the machine did during a run "
           "(CPU-seconds its CPUs spent on other processes) is shown where there was any." % (
               " and ".join(dates), machine["cpu"], ", ".join(machine["cpu_flags"]),
               machine["cores"], machine["memory_gb"], machine["system"], machine["python"]),
           "", "| run | wall time | peak memory | disk | notes |", "|---|---|---|---|---|"]
  for r in results:
    notes = []
    if r.get("seconds_per_step"):
      notes.append("%.1f s a step after the first" % r["seconds_per_step"])
    if r.get("steps"):
      notes.append("%d steps" % r["steps"])
    if r.get("other_cpu_seconds") and r["other_cpu_seconds"] >= 1:
      notes.append("other work: %.0f CPU-seconds" % r["other_cpu_seconds"])
    lines.append("| %s | %s | %.1f GB | %.2f GB | %s |" % (
        r["what"], _duration(r["seconds"]), r["peak_mb"] / 1e3, r["disk_mb"] / 1e3,
        "; ".join(notes)))
  lines += ["", "The commands, each with its own time and peak memory:", ""]
  for r in results:
    lines.append("- **%s**" % r["key"])
    for c in r["commands"]:
      lines.append("  - %s: %s, %.1f GB: `%s`" % (c["label"], _duration(c["seconds"]),
                                                  c["peak_mb"] / 1e3, _short(c["command"])))
  return "\n".join(lines) + "\n"


def _short(command):
  """A command as a reader would type it: paths of this run's scratch
  directory and interpreter shortened."""
  command = command.replace(sys.executable, "python")
  command = re.sub(r"/tmp/run_costs[^/ ]*/", "$SCRATCH/", command)
  return command.replace(common.SHARED_DATA, "../shared/data").replace(
      common.REPO_ROOT + os.sep, "")


def _duration(seconds):
  from plumbing import progress  # pylint: disable=g-import-not-at-top
  return progress.duration(seconds)


def _earlier_rows(output, machine):
  """{key: row} of the page already at `output`, when it was made on a
  machine of the same CPU and cores (rows this run does not make again
  stay)."""
  try:
    with open(output + ".json", encoding="utf-8") as f:
      earlier = json.load(f)
  except (OSError, ValueError):
    return {}
  same = all(earlier.get("machine", {}).get(k) == machine[k] for k in ("cpu", "cores"))
  if not same:
    return {}
  return {r["key"]: dict(r, date=r.get("date", earlier.get("date"))) for r in earlier["rows"]}


def main():
  args = _parser().parse_args()
  rows = args.rows.split(",")
  unknown = sorted(set(rows) - set(ROWS))
  if unknown:
    sys.exit("bench_run_costs: unknown rows %s; known: %s" % (unknown, ", ".join(ROWS)))
  needs = {"quick_start": os.path.join(args.glue_dir, "MRPC"),
           "epoch": os.path.join(args.glue_dir, args.epoch_task)}
  date = datetime.date.today().isoformat()
  results = []
  scratch = tempfile.mkdtemp(prefix="run_costs")
  try:
    for key in rows:
      if key in needs and common.skipped(key, needs[key], common.GLUE_WHERE):
        continue
      if key == "demo":
        results.append(demo(args, scratch))
      elif key == "quick_start":
        results.append(quick_start(args, scratch))
      elif key == "epoch":
        results.append(epoch(args, scratch))
      else:
        length = int(key.split("_")[1])
        results.append(pretrain(args, scratch, length, 32 if length == 128 else 8))
  finally:
    shutil.rmtree(scratch, ignore_errors=True)
  machine = common.machine()
  for result in results:
    result["date"] = date
  rows = dict(_earlier_rows(args.output, machine), **{r["key"]: r for r in results})
  results = [rows[key] for key in ROWS if key in rows]
  common.write_text(args.output + ".json", json.dumps(
      {"machine": machine, "args": vars(args), "rows": results}, indent=2) + "\n")
  common.write_text(args.output + ".md", _markdown(results, machine))
  print("Wrote %s.md and .json" % args.output)


if __name__ == "__main__":
  main()
