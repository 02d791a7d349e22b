"""Fine-tuning a real pretrained BERT on GLUE and CoNLL-2003: ours against
Hugging Face, the paper's recipe, several seeds each, dev (and test)
metrics and whole-command times.

  python -m bench.bench_pretrained_glue [--tasks=RTE,MRPC,STS-B,CoLA,SST-2,CoNLL-2003]
      [--seeds=1,2,3] [--learning_rate=5e-5] [--sst2_train_rows=8000]
      [--conll_train_sentences=4000] [--glue_dir=../shared/data/glue]
      [--conll_dir=../shared/data/conll2003]

The model is all-MiniLM-L6-v2 (bench/pretrained.py), the same files on
both sides: ours imports its directory with bert-convert-checkpoint (exact
GELU), transformers reads it. The recipe (the paper's): batch 32, 3 epochs,
sequence length 128, 10% linear warm-up, one learning rate for both sides
(--learning_rate), evaluation batch 8. Per task and seed, one command each:
  ours  run_classifier.py --do_train --do_eval --seed=N (the original's
        optimizer, shuffling and batching; its defaults);
  hf    transformers' Trainer as its run_glue example sets it up: the
        directory's tokenizer, AutoModelForSequenceClassification,
        TrainingArguments with the recipe and seed=N (AdamW with bias
        correction, no weight decay, gradient clipping at 1.0, a new random
        shuffle each epoch), dynamic padding (DataCollatorWithPadding, the
        faster of run_glue's two options), no checkpoints saved; then its
        predictions on the dev set.
Both score the dev set with the same code (tasks/metrics.py):
accuracy (RTE, MRPC, SST-2; MRPC's F1 too), Spearman and Pearson (STS-B),
Matthews correlation (CoLA). SST-2 trains on the first --sst2_train_rows
rows of its 67,349 (3 epochs of all of them take hours here).
CoNLL-2003 (named entities): ours run_ner.py --do_train --do_eval
--do_predict; Hugging Face as its run_ner example trains
(AutoModelForTokenClassification, each word's label on its first piece and
-100 on the others, DataCollatorForTokenClassification, the same
TrainingArguments), then its predictions on dev and test, each word tagged
by its first piece. Both are scored by the CoNLL scorer's counts
(tasks/ner/metrics.py): entity F1 on the full dev and test sets; training
on the first --conll_train_sentences of the 14,041 sentences.

--ours_flags adds flags to our runs (the opt-in optimizer of Hugging Face's
Trainer, say); those runs are kept apart and set against the same Hugging
Face runs. Every finished run is kept in bench/output/pretrained_glue/ (one
JSON file per task, peer and seed) and is not run again: an interrupted benchmark
resumes, and more seeds can be added later. Peers take turns (the order
flips with each seed). Prints per task each side's mean ± standard
deviation, every seed's value, and the median whole-command seconds (and
CPU seconds) with their ratio (theirs / ours, above 1: ours faster), from
the runs during which other work on the machine took under 5% of a CPU
(all runs if none was that quiet; the table says how many); writes
bench/output/pretrained_glue.{json,md}.
"""

import argparse
import csv
import datetime
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

from bench import common
from bench import environments
from bench import pretrained

OUTPUT = os.path.join(common.REPO_ROOT, "bench", "output")
PEERS = ("ours", "hf")
BATCH, EVAL_BATCH, SEQ, EPOCHS, WARMUP = 32, 8, 128, 3, 0.1


class Task(object):
  """A GLUE task's TSV layout: header line or not, text columns, label
  column, labels (None: a regression score)."""

  def __init__(self, header, text_a, text_b, label, labels):
    self.header, self.text_a, self.text_b = header, text_a, text_b
    self.label, self.labels = label, labels


TASKS = {"RTE": Task(True, 1, 2, 3, ["entailment", "not_entailment"]),
         "MRPC": Task(True, 3, 4, 0, ["0", "1"]),
         "STS-B": Task(True, 7, 8, 9, None),
         "CoLA": Task(False, 3, None, 1, ["0", "1"]),
         "SST-2": Task(True, 0, None, 1, ["0", "1"])}
NER = "CoNLL-2003"
# The metric each task is compared by (the first), and the others reported.
METRICS = {"RTE": ("eval_accuracy",), "MRPC": ("eval_accuracy", "eval_f1"),
           "STS-B": ("eval_spearman", "eval_pearson"), "CoLA": ("eval_mcc",),
           "SST-2": ("eval_accuracy",), NER: ("eval_f1", "test_f1")}
ALL_TASKS = tuple(TASKS) + (NER,)


def read_rows(task_name, path):
  """(text_a, text_b or None, label) of a task's TSV file, as its processor
  in tasks/classification/glue.py reads them."""
  task = TASKS[task_name]
  with open(path, encoding="utf-8-sig") as f:
    rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
  return [(r[task.text_a], r[task.text_b] if task.text_b is not None else None, r[task.label])
          for r in rows[int(task.header):]]


def task_data(task_name, glue_dir, directory, max_rows):
  """train.tsv (its first `max_rows` rows, all if None) and dev.tsv of a
  task, copied into `directory`; returns the training rows."""
  source = os.path.join(glue_dir, task_name)
  os.makedirs(directory, exist_ok=True)
  with open(os.path.join(source, "train.tsv"), encoding="utf-8") as f:
    lines = f.readlines()
  header = int(TASKS[task_name].header)
  rows = len(lines) - header if max_rows is None else min(max_rows, len(lines) - header)
  with open(os.path.join(directory, "train.tsv"), "w", encoding="utf-8") as f:
    f.writelines(lines[:header + rows])
  shutil.copy(os.path.join(source, "dev.tsv"), directory)
  return rows


def ner_data(conll_dir, directory, sentences):
  """CoNLL-2003's train.txt (its first `sentences`), dev.txt and test.txt
  copied into `directory`; returns the training sentences."""
  os.makedirs(directory, exist_ok=True)
  with open(os.path.join(conll_dir, "train.txt"), encoding="utf-8") as f:
    blocks = [b for b in f.read().replace("\r\n", "\n").split("\n\n") if b.strip()]
  kept = [b for b in blocks if not b.startswith("-DOCSTART-")][:sentences]
  with open(os.path.join(directory, "train.txt"), "w", encoding="utf-8") as f:
    f.write("\n\n".join(kept) + "\n")
  for name in ("dev.txt", "test.txt"):
    shutil.copy(os.path.join(conll_dir, name), directory)
  return len(kept)


# ---------------------------------------------------------------- the peer


def hf_training_arguments(transformers, args):
  """The recipe as run_glue's and run_ner's TrainingArguments."""
  return transformers.TrainingArguments(
      output_dir=args.output_dir, per_device_train_batch_size=BATCH,
      per_device_eval_batch_size=EVAL_BATCH, learning_rate=args.learning_rate,
      num_train_epochs=EPOCHS, warmup_steps=WARMUP, seed=args.seed, save_strategy="no",
      eval_strategy="no", report_to="none", logging_strategy="no", disable_tqdm=True,
      use_cpu=True)


def worker_hf(args):
  """Hugging Face's run_glue recipe on one task and seed; writes the dev
  predictions to --output_dir/predictions.json."""
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  common.mark_started()
  torch.set_num_threads(os.cpu_count())
  task = TASKS[args.task]
  transformers.set_seed(args.seed)
  tokenizer = transformers.AutoTokenizer.from_pretrained(args.model_dir)
  regression = task.labels is None
  model = transformers.AutoModelForSequenceClassification.from_pretrained(
      args.model_dir, num_labels=1 if regression else len(task.labels),
      problem_type="regression" if regression else "single_label_classification")

  def features(split):
    rows = read_rows(args.task, os.path.join(args.data_dir, split + ".tsv"))
    texts_b = [r[1] for r in rows] if task.text_b is not None else None
    encoded = tokenizer([r[0] for r in rows], texts_b, truncation=True, max_length=SEQ)
    labels = [float(r[2]) if regression else task.labels.index(r[2]) for r in rows]
    return [dict({k: v[i] for k, v in encoded.items()}, labels=labels[i])
            for i in range(len(rows))], labels

  train, _ = features("train")
  dev, dev_labels = features("dev")
  training_args = hf_training_arguments(transformers, args)
  trainer = transformers.Trainer(
      model=model, args=training_args, train_dataset=train,
      data_collator=transformers.DataCollatorWithPadding(tokenizer), processing_class=tokenizer)
  trainer.train()
  predictions = trainer.predict(dev).predictions
  with open(os.path.join(args.output_dir, "predictions.json"), "w") as f:
    json.dump({"predictions": predictions.tolist(), "labels": dev_labels}, f)
  common.report_result({"steps": trainer.state.global_step})


def worker_hf_ner(args):
  """Hugging Face's run_ner recipe; writes each dev and test word's
  predicted tag to --output_dir/predictions.json."""
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  from tasks.ner import conll  # pylint: disable=g-import-not-at-top
  common.mark_started()
  torch.set_num_threads(os.cpu_count())
  transformers.set_seed(args.seed)
  splits = {name: conll.read_sentences(os.path.join(args.data_dir, name + ".txt"))
            for name in ("train", "dev", "test")}
  labels = sorted({t for s in splits["train"] for t in s.tags})
  tokenizer = transformers.AutoTokenizer.from_pretrained(args.model_dir)
  model = transformers.AutoModelForTokenClassification.from_pretrained(
      args.model_dir, num_labels=len(labels), id2label=dict(enumerate(labels)),
      label2id={l: i for i, l in enumerate(labels)})

  def features(sentences):
    encoded = tokenizer([s.words for s in sentences], is_split_into_words=True,
                        truncation=True, max_length=SEQ)
    out = []
    for i, sentence in enumerate(sentences):
      words, previous, label_ids = encoded.word_ids(i), None, []
      for word in words:
        label_ids.append(-100 if word is None or word == previous else
                         labels.index(sentence.tags[word]) if sentence.tags[word] in labels
                         else 0)
        previous = word
      out.append(dict({k: v[i] for k, v in encoded.items()}, labels=label_ids))
    return out, encoded

  train, _ = features(splits["train"])
  training_args = hf_training_arguments(transformers, args)
  trainer = transformers.Trainer(
      model=model, args=training_args, train_dataset=train,
      data_collator=transformers.DataCollatorForTokenClassification(tokenizer),
      processing_class=tokenizer)
  trainer.train()
  predicted = {}
  for name in ("dev", "test"):
    data, encoded = features(splits[name])
    logits = trainer.predict(data).predictions
    tags = []
    for i, sentence in enumerate(splits[name]):
      word_tags, previous = ["O"] * len(sentence.words), None
      for position, word in enumerate(encoded.word_ids(i)):
        if word is not None and word != previous:
          word_tags[word] = labels[int(logits[i][position].argmax())]
        previous = word
      tags.append(word_tags)
    predicted[name] = tags
  with open(os.path.join(args.output_dir, "predictions.json"), "w") as f:
    json.dump(predicted, f)
  common.report_result({"steps": trainer.state.global_step})


def hf_ner_metrics(data_dir, output_dir):
  """Entity F1 of Hugging Face's dev and test predictions, by the CoNLL
  scorer's counts."""
  from tasks.ner import conll  # pylint: disable=g-import-not-at-top
  from tasks.ner import metrics  # pylint: disable=g-import-not-at-top
  with open(os.path.join(output_dir, "predictions.json")) as f:
    predicted = json.load(f)
  out = {}
  for name, key in (("dev", "eval_f1"), ("test", "test_f1")):
    gold = [s.tags for s in conll.read_sentences(os.path.join(data_dir, name + ".txt"))]
    out[key] = metrics.scores(metrics.counts_of(gold, predicted[name]))["eval_f1"]
  return out


def hf_metrics(task_name, output_dir):
  """The dev metrics of Hugging Face's predictions, by our scoring code."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  from tasks import metrics  # pylint: disable=g-import-not-at-top
  with open(os.path.join(output_dir, "predictions.json")) as f:
    saved = json.load(f)
  logits = np.asarray(saved["predictions"], np.float32)
  labels = np.asarray(saved["labels"])
  per_example = np.zeros(len(labels), np.float32)
  task_metrics = tuple(m[len("eval_"):] for m in METRICS[task_name] if m in ("eval_f1",
                                                                             "eval_mcc"))
  results = metrics.eval_metrics((logits, per_example, np.ones(len(labels))), labels,
                                 EVAL_BATCH, task_metrics, TASKS[task_name].labels is None)
  return {k: float(v) for k, v in results.items() if k in METRICS[task_name]}


def ours_metrics(output_dir):
  results = {}
  for name in ("eval_results.txt", "test_results.txt"):
    if os.path.exists(os.path.join(output_dir, name)):
      with open(os.path.join(output_dir, name)) as f:
        results.update((k, float(v)) for k, v in (l.strip().split(" = ") for l in f))
  return results


# ---------------------------------------------------------------- driver


def command(args, peer, task_name, seed, data_dir, output_dir, checkpoint_dir, model_dir):
  if peer == "ours":
    script = ["run_ner.py", "--do_predict"] if task_name == NER else [
        "run_classifier.py", "--task_name=" + task_name]
    return [sys.executable, os.path.join(common.REPO_ROOT, script[0])] + script[1:] + [
            "--do_train", "--do_eval", "--data_dir=" + data_dir,
            "--vocab_file=" + os.path.join(checkpoint_dir, "vocab.txt"),
            "--bert_config_file=" + os.path.join(checkpoint_dir, "bert_config.json"),
            "--init_checkpoint=" + os.path.join(checkpoint_dir, "bert_model.ckpt"),
            "--do_lower_case=true", "--max_seq_length=%d" % SEQ,
            "--train_batch_size=%d" % BATCH, "--eval_batch_size=%d" % EVAL_BATCH,
            "--learning_rate=%g" % args.learning_rate, "--num_train_epochs=%d" % EPOCHS,
            "--warmup_proportion=%g" % WARMUP, "--seed=%d" % seed,
            "--xla_cache_dir=" + os.path.join(OUTPUT, "pretrained_glue", "xla_cache"),
            "--output_dir=" + output_dir] + args.ours_flags.split()
  return [environments.python_of("hf"), "-m", "bench.bench_pretrained_glue",
          "--worker=" + ("ner" if task_name == NER else "glue"), "--task=" + task_name, "--seed=%d" % seed, "--data_dir=" + data_dir,
          "--output_dir=" + output_dir, "--model_dir=" + model_dir,
          "--learning_rate=%g" % args.learning_rate]


def timed(cmd, label, log_path):
  """Runs `cmd`, its standard error kept in `log_path` (our log lines carry
  times: where a run's time went); (wall seconds, its CPU seconds, CPU
  seconds the host took meanwhile, CPU seconds other work on this machine
  took meanwhile), or None after printing why it failed."""
  before = resource.getrusage(resource.RUSAGE_CHILDREN)
  stolen, busy = common.host_stolen_seconds(), common.busy_cpu_seconds()
  start = time.perf_counter()
  result = subprocess.run(cmd, cwd=common.REPO_ROOT, capture_output=True, text=True,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  seconds = time.perf_counter() - start
  after = resource.getrusage(resource.RUSAGE_CHILDREN)
  common.write_text(log_path, result.stderr)
  if result.returncode:
    sys.stderr.write("%s failed:\n%s\n" % (label, result.stderr[-3000:]))
    return None
  cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
  busy = common.stolen_between(busy, common.busy_cpu_seconds())
  return (seconds, cpu, common.stolen_between(stolen, common.host_stolen_seconds()),
          None if busy is None else max(busy - cpu, 0.0))


def run_one(args, peer, task_name, seed, data_dir, run_dir, checkpoint_dir, model_dir):
  """One fine-tuning run, or its kept result."""
  record = os.path.join(run_dir, "%s-seed%d.json" % (peer, seed))
  if os.path.exists(record):
    with open(record) as f:
      return json.load(f)
  if args.report_only:
    return None
  output_dir = os.path.join(run_dir, "work", "%s-seed%d" % (peer, seed))
  shutil.rmtree(output_dir, ignore_errors=True)
  os.makedirs(output_dir)
  label = "%s %s seed %d" % (task_name, peer, seed)
  outcome = timed(command(args, peer, task_name, seed, data_dir, output_dir, checkpoint_dir,
                          model_dir), label, record[:-len(".json")] + ".log")
  if outcome is None:
    return None
  if peer == "ours":
    metrics = ours_metrics(output_dir)
  elif task_name == NER:
    metrics = hf_ner_metrics(data_dir, output_dir)
  else:
    metrics = hf_metrics(task_name, output_dir)
  cpu = common.machine()
  result = {"metrics": {k: metrics[k] for k in METRICS[task_name]}, "seconds": outcome[0],
            "cpu": "%s (%s)" % (cpu["cpu"], ", ".join(cpu["cpu_flags"])),
            "date": datetime.date.today().isoformat(),
            "cpu_seconds": outcome[1], "host_stolen_seconds": outcome[2],
            "other_cpu_seconds": outcome[3]}
  common.write_text(record, json.dumps(result, indent=2) + "\n")
  shutil.rmtree(output_dir, ignore_errors=True)
  print("%-6s %-4s seed %-3d %s  %6.1f s (CPU %6.1f s; other work %.0f CPU s)" % (
      task_name, peer, seed, "  ".join("%s %.4f" % (k[5:], v) for k, v in
                                       result["metrics"].items()), outcome[0], outcome[1],
      outcome[3] or 0), flush=True)
  return result


# A run is timed on a quiet machine when other work took less than this
# share of one CPU while it ran.
QUIET = 0.05


def is_quiet(run):
  other = run.get("other_cpu_seconds")
  return other is not None and other < QUIET * run["seconds"]


def summary(task_name, runs):
  """{peer: {metric: [values by seed], seconds: [...], cpu_seconds: [...]}};
  the times are those of the runs on a quiet machine, if any."""
  out = {}
  for peer, by_seed in runs.items():
    kept = [r for r in by_seed.values() if r]
    quiet = [r for r in kept if is_quiet(r)]
    timed_runs = quiet or kept
    out[peer] = {"seeds": sorted(s for s, r in by_seed.items() if r),
                 "cpus": sorted({r.get("cpu", "not recorded") for r in kept}),
                 "dates": sorted({r["date"] for r in kept if "date" in r}),
                 "seconds": [r["seconds"] for r in timed_runs],
                 "cpu_seconds": [r["cpu_seconds"] for r in timed_runs],
                 "quiet_runs": len(quiet)}
    for metric in METRICS[task_name]:
      out[peer][metric] = [r["metrics"][metric] for r in kept]
  return out


def mean_sd(values):
  if not values:
    return "-"
  sd = statistics.stdev(values) if len(values) > 1 else 0.0
  return "%.2f ± %.2f" % (100 * statistics.mean(values), 100 * sd)


def gap(ours, hf):
  """Ours' mean minus Hugging Face's, in points, against Hugging Face's
  standard deviation (the target: within it)."""
  if not ours or len(hf) < 2:
    return "-"
  difference = 100 * (statistics.mean(ours) - statistics.mean(hf))
  sd = 100 * statistics.stdev(hf)
  return "%+.2f (sd %.2f): %s" % (difference, sd,
                                  "within" if abs(difference) <= sd else "outside")


def report(results, train_rows, learning_rate):
  """The Markdown table of a run's results."""
  lines = ["| task (train rows) | metric | ours: mean ± sd | Hugging Face: mean ± sd | "
           "ours by seed | Hugging Face by seed | ours - HF (HF's sd) | "
           "seconds, ours / HF (median) | HF / ours, wall (CPU) |",
           "|---|---|---|---|---|---|---|---|---|"]
  for task_name, by_peer in results.items():
    ours, hf = by_peer.get("ours", {}), by_peer.get("hf", {})
    for n, metric in enumerate(METRICS[task_name]):
      timing = ratio = ""
      if n == 0 and ours.get("seconds") and hf.get("seconds"):
        o, h = statistics.median(ours["seconds"]), statistics.median(hf["seconds"])
        oc, hc = statistics.median(ours["cpu_seconds"]), statistics.median(hf["cpu_seconds"])
        timing = "%.0f / %.0f (%d / %d quiet runs)" % (o, h, ours["quiet_runs"],
                                                      hf["quiet_runs"])
        ratio = "%.2fx (%.2fx)" % (h / o, hc / oc)
      lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
          "%s (%d)" % (task_name, train_rows[task_name]) if n == 0 else "",
          metric.replace("eval_", "dev ").replace("test_", "test "),
          mean_sd(ours.get(metric, [])), mean_sd(hf.get(metric, [])),
          " / ".join("%.1f" % (100 * v) for v in ours.get(metric, [])),
          " / ".join("%.1f" % (100 * v) for v in hf.get(metric, [])),
          gap(ours.get(metric, []), hf.get(metric, [])), timing, ratio))
  cpus = sorted({c for r in results.values() for p in r.values() for c in p.get("cpus", [])})
  dates = sorted({d for r in results.values() for p in r.values() for d in p.get("dates", [])})
  return ("Fine-tuning all-MiniLM-L6-v2, batch %d, %d epochs, length %d, learning rate %g, "
          "10%% warm-up; dev set; seeds %s. Runs on %s%s.\n\n%s\n" % (
              BATCH, EPOCHS, SEQ, learning_rate, ", ".join(sorted({
                  str(s) for r in results.values() for p in r.values() for s in p["seeds"]})),
              " / ".join(cpus) or "an unrecorded CPU",
              ", %s to %s" % (dates[0], dates[-1]) if len(dates) > 1 else
              ", %s" % dates[0] if dates else "", "\n".join(lines)))


# The README's names for the tasks' metrics.
METRIC_NAMES = {"eval_accuracy": "accuracy", "eval_f1": "F1", "eval_spearman": "Spearman",
                "eval_pearson": "Pearson", "eval_mcc": "Matthews corr.",
                "test_f1": "test F1"}


def readme_summary(report_json):
  """The README's table of expected results, from a run's
  pretrained_glue.json: per task, each side's mean ± sd, the seeds, and the
  whole-command time ratio."""
  results = report_json["results"]
  m = report_json["machine"]
  cpus = sorted({c for r in results.values() for p in r.values() for c in p.get("cpus", [])})
  lines = ["All-MiniLM-L6-v2 fine-tuned by ours and by Hugging Face's Trainer, the same "
           "recipe (learning rate %g, batch %d, %d epochs, 10%% warm-up), dev set, mean ± sd "
           "over seeds; runs on %s, %d cores (`python -m bench.bench_pretrained_glue`; every "
           "seed: [docs/benchmarks/](docs/benchmarks/pretrained_glue.md); why the two differ: "
           "[performance](docs/performance.md#a-real-pretrained-model-on-glue-and-conll-all-"
           "minilm-l6-v2)):" % (
               report_json["learning_rate"], BATCH, EPOCHS, " / ".join(cpus) or m["cpu"],
               m["cores"]), "",
           "| task (training rows) | metric | ours | Hugging Face | seeds | time, HF / ours |",
           "|---|---|---|---|---|---|"]

  def cell(values):
    if not values:
      return "-"
    sd = statistics.stdev(values) if len(values) > 1 else None
    return "%.1f" % (100 * statistics.mean(values)) + (
        " ± %.1f" % (100 * sd) if sd is not None else "")

  for task_name, by_peer in results.items():
    ours, hf = by_peer.get("ours", {}), by_peer.get("hf", {})
    metrics = METRICS[task_name]
    ratio = ""
    if ours.get("seconds") and hf.get("seconds"):
      ratio = "%.2fx" % (statistics.median(hf["seconds"]) / statistics.median(ours["seconds"]))
      if 0 in (ours.get("quiet_runs"), hf.get("quiet_runs")):
        ratio += " (busy machine)"  # No run of that side was timed alone.
    lines.append("| %s (%d) | %s | %s | %s | %s | %s |" % (
        task_name, report_json["train_rows"][task_name],
        " / ".join(METRIC_NAMES[k] for k in metrics),
        " / ".join(cell(ours.get(k, [])) for k in metrics),
        " / ".join(cell(hf.get(k, [])) for k in metrics),
        "%d / %d" % (len(ours.get("seeds", [])), len(hf.get("seeds", []))), ratio))
  return "\n".join(lines)


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--tasks", default=",".join(ALL_TASKS))
  parser.add_argument("--seeds", default="1,2,3")
  parser.add_argument("--peers", default=",".join(PEERS))
  parser.add_argument("--learning_rate", type=float, default=5e-5)
  parser.add_argument("--sst2_train_rows", type=int, default=8000)
  parser.add_argument("--conll_train_sentences", type=int, default=4000)
  parser.add_argument("--conll_dir", default=os.path.join(common.SHARED_DATA, "conll2003"))
  parser.add_argument("--max_train_rows", type=int, default=None,
                      help="Cut every task's training rows (a quick check of the set-up).")
  parser.add_argument("--glue_dir", default=os.path.join(common.SHARED_DATA, "glue"))
  parser.add_argument("--output_dir", default=os.path.join(OUTPUT, "pretrained_glue"))
  parser.add_argument("--ours_flags", default="",
                      help="More flags for our scripts, e.g. \"--adam_bias_correction "
                      "--weight_decay_rate=0 --adam_epsilon=1e-8 --decay_after_warmup "
                      "--clip_dense_norm --train_shuffle_buffer=0\" (Hugging Face Trainer's "
                      "defaults; --head_initializer=normal draws the new head as Hugging "
                      "Face does): our runs with them are kept apart and compared with the "
                      "same Hugging Face runs.")
  parser.add_argument("--report_only", action="store_true",
                      help="Report the kept runs; run none.")
  parser.add_argument("--summary", default=None,
                      help="Print the README's table from this pretrained_glue.json, and stop.")
  parser.add_argument("--worker", choices=["glue", "ner"])
  parser.add_argument("--task")
  parser.add_argument("--seed", type=int)
  parser.add_argument("--data_dir")
  parser.add_argument("--model_dir")
  args = parser.parse_args()
  if args.summary:
    with open(args.summary, encoding="utf-8") as f:
      print(readme_summary(json.load(f)))
    return
  if args.worker:
    return (worker_hf_ner if args.worker == "ner" else worker_hf)(args)
  model_dir = pretrained.hf_directory()
  if model_dir is None:
    print("pretrained_glue: skipped: " + pretrained.WHERE)
    return
  checkpoint_dir = pretrained.imported(os.path.join(args.output_dir, "checkpoint"))
  results, train_rows = {}, {}
  for task_name in args.tasks.split(","):
    source = (os.path.join(args.conll_dir, "train.txt") if task_name == NER else
              os.path.join(args.glue_dir, task_name, "train.tsv"))
    if not os.path.exists(source):
      print("%s: skipped: no %s (%s)" % (
          task_name, source, "the CoNLL-2003 English files, train.txt, dev.txt and test.txt; "
          "--conll_dir" if task_name == NER else
          "GLUE's download script, download_glue_data.py, writes it; --glue_dir"))
      continue
    rows = {"SST-2": args.sst2_train_rows, NER: args.conll_train_sentences}.get(task_name)
    if args.max_train_rows:
      rows = min(rows or args.max_train_rows, args.max_train_rows)
    run_dir = os.path.join(args.output_dir, "%s-rows%s-lr%g" % (task_name, rows or "all",
                                                              args.learning_rate))
    data_dir = os.path.join(run_dir, "data")
    if task_name == NER:
      train_rows[task_name] = ner_data(args.conll_dir, data_dir, rows)
    else:
      train_rows[task_name] = task_data(task_name, args.glue_dir, data_dir, rows)
    # Our runs with --ours_flags are kept beside the others, under their flags.
    variant = "".join(c if c.isalnum() or c in "=.-_" else "+"
                      for c in args.ours_flags.replace("--", "").strip())
    runs = {peer: {} for peer in args.peers.split(",")}
    for n, seed in enumerate(int(s) for s in args.seeds.split(",")):
      order = list(runs) if n % 2 == 0 else list(runs)[::-1]
      for peer in order:
        records = os.path.join(run_dir, variant) if peer == "ours" and variant else run_dir
        runs[peer][seed] = run_one(args, peer, task_name, seed, data_dir, records,
                                   checkpoint_dir, model_dir)
    results[task_name] = summary(task_name, runs)
  text = report(results, train_rows, args.learning_rate)
  if args.ours_flags:
    text = "Ours with %s.\n%s" % (args.ours_flags, text)
  print("\n" + text)
  name = os.path.join(os.path.dirname(args.output_dir), "pretrained_glue" + (
      "-" + variant if variant else ""))
  common.write_text(name + ".json", json.dumps(
      {"learning_rate": args.learning_rate, "train_rows": train_rows, "results": results,
       "ours_flags": args.ours_flags, "machine": common.machine(),
       "date": datetime.date.today().isoformat()}, indent=2) + "\n")
  common.write_text(name + ".md", text)


if __name__ == "__main__":
  main()
