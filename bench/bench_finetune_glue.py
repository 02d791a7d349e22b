"""Fine-tuning and evaluation as users run them: one epoch on real GLUE
training files, then the dev set, each a whole command (start-up,
tokenization and records included), every peer on the same rows.

  python -m bench.bench_finetune_glue [--tasks=SST-2,CoLA,MRPC,RTE]
      [--max_train_rows=16000] [--bert_config_file=...] [--peers=...]
      [--original_dir=/path/to/google-research/bert]

Data: ../shared/data/glue/<task>/{train,dev}.tsv, training files cut to
their first --max_train_rows rows. Every peer fine-tunes the same
randomly initialised BERT (--bert_config_file, BERT-Mini by default) with
batch 32, learning rate 2e-5, 10% linear warm-up, sequence length 128, and
evaluates with batch 8. Peers:
  ours           run_classifier.py --do_train, then --do_eval (each batch at
                 its longest row, evaluation in batches of similar length);
  ours/warm      ours trained again, loading the XLA kernels ours compiled
                 (--xla_cache_dir): what every run after a user's first
                 sees (ours, ours/fixed: a new, empty cache each);
  ours/fixed     the same with --pad_to_max_seq_length: every batch at 128,
                 as before length-aware batches;
  original       google-research/bert's run_classifier.py functions under
                 tf.compat.v1 (its example conversion, TFRecords, input_fn,
                 create_model and optimizer, trained in a session loop, as its
                 Estimator does on a CPU; SST-2 and RTE, which it has no
                 processor for, get one in its own style here); fixed length;
  hf             Hugging Face on PyTorch as its GLUE example script runs:
                 BertTokenizerFast, dynamic padding (DataCollatorWithPadding),
                 AdamW with linear warm-up, gradient clipping at 1.0;
  tf_models      tf-models-official: its classifier_data_lib writes the
                 records (a processor in its style reads the TSV files: its
                 GLUE processors read only TensorFlow Datasets, which cannot
                 download here), then `python -m official.legacy.bert.
                 run_classifier --mode=train_and_eval`, which trains and
                 evaluates in one command; fixed length. Compared on the sum
                 of both commands against ours' training + evaluation.
Each peer trains once; the evaluations then run --eval_rounds times (3),
peers taking turns, and their medians count. Prints seconds per command,
and after start-up (from the moment a command
has imported its libraries to its end: tokenizer, records, model, checkpoint
and the work itself; tf_models has no such mark), dev accuracy (a check that
each run trained, not a comparison: one epoch from random weights), and
ratios (theirs / ours, above 1: ours faster); saves
bench/output/finetune_glue.json.
"""

import csv
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from bench import common
from bench import environments

PEERS = ("ours", "ours/warm", "ours/fixed", "original", "hf", "tf_models")
BATCH, EVAL_BATCH, SEQ, LEARNING_RATE, WARMUP = 32, 8, 128, 2e-5, 0.1
# Each task's files: (header line?, text_a column, text_b column, label column, labels).
COLUMNS = {"SST-2": (True, 0, None, 1, ["0", "1"]),
           "CoLA": (False, 3, None, 1, ["0", "1"]),
           "MRPC": (True, 3, 4, 0, ["0", "1"]),
           "RTE": (True, 1, 2, -1, ["entailment", "not_entailment"])}


def read_rows(task, path):
  """(text_a, text_b or None, label) of a GLUE file."""
  header, a, b, label, _ = COLUMNS[task]
  with open(path, encoding="utf-8-sig") as f:
    rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
  return [(r[a], r[b] if b is not None else None, r[label]) for r in rows[int(header):]]


def task_data(glue_dir, task, directory, max_rows):
  """A copy of the task's train.tsv (its first `max_rows` rows) and dev.tsv."""
  source = os.path.join(glue_dir, task)
  os.makedirs(directory)
  with open(os.path.join(source, "train.tsv"), encoding="utf-8") as f:
    lines = f.readlines()
  header = int(COLUMNS[task][0])
  with open(os.path.join(directory, "train.tsv"), "w", encoding="utf-8") as f:
    f.writelines(lines[:header + max_rows])
  shutil.copy(os.path.join(source, "dev.tsv"), directory)
  return min(max_rows, len(lines) - header)


# ---------------------------------------------------------------- workers


def worker_hf(args):
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  common.mark_started()
  torch.manual_seed(12345)
  labels = COLUMNS[args.task][4]
  rows = read_rows(args.task, os.path.join(args.data_dir,
                                           "train.tsv" if args.train else "dev.tsv"))
  if args.train:
    tokenizer = transformers.BertTokenizerFast(args.vocab_file, do_lower_case=True)
    with open(args.bert_config_file) as f:
      c = json.load(f)
    model = transformers.BertForSequenceClassification(transformers.BertConfig(
        vocab_size=c["vocab_size"], hidden_size=c["hidden_size"],
        num_hidden_layers=c["num_hidden_layers"], num_attention_heads=c["num_attention_heads"],
        intermediate_size=c["intermediate_size"], hidden_act="gelu_new",
        max_position_embeddings=c["max_position_embeddings"],
        type_vocab_size=c["type_vocab_size"], num_labels=len(labels)))
  else:
    tokenizer = transformers.BertTokenizerFast.from_pretrained(args.output_dir)
    model = transformers.BertForSequenceClassification.from_pretrained(args.output_dir)
  texts_b = [r[1] for r in rows] if rows[0][1] is not None else None
  encoded = tokenizer([r[0] for r in rows], texts_b, truncation=True, max_length=SEQ)
  features = [dict({k: v[i] for k, v in encoded.items()}, labels=labels.index(r[2]))
              for i, r in enumerate(rows)]
  loader = torch.utils.data.DataLoader(
      features, batch_size=BATCH if args.train else EVAL_BATCH, shuffle=args.train,
      collate_fn=transformers.DataCollatorWithPadding(tokenizer))
  if not args.train:
    model.eval()
    correct = 0
    with torch.inference_mode():
      for batch in loader:
        correct += int((model(**batch).logits.argmax(-1) == batch["labels"]).sum())
    return {"accuracy": correct / len(features)}
  no_decay = ("bias", "LayerNorm.weight")
  groups = [{"params": [p for n, p in model.named_parameters() if not n.endswith(no_decay)],
             "weight_decay": 0.01},
            {"params": [p for n, p in model.named_parameters() if n.endswith(no_decay)],
             "weight_decay": 0.0}]
  optimizer = torch.optim.AdamW(groups, lr=LEARNING_RATE)
  steps = len(loader)
  schedule = transformers.get_linear_schedule_with_warmup(optimizer, int(WARMUP * steps), steps)
  model.train()
  for batch in loader:
    model(**batch).loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    schedule.step()
    optimizer.zero_grad()
  model.save_pretrained(args.output_dir)
  tokenizer.save_pretrained(args.output_dir)
  return {"steps": steps}


def worker_original(args):
  import collections  # pylint: disable=g-import-not-at-top
  import types  # pylint: disable=g-import-not-at-top
  from bench import bench_model  # pylint: disable=g-import-not-at-top
  tf, modeling, optimization, code_dir = bench_model.original_modules(args)
  tf.contrib = types.SimpleNamespace(data=types.SimpleNamespace(  # Gone from TF2.
      map_and_batch=tf.data.experimental.map_and_batch))
  import tokenization  # pylint: disable=g-import-not-at-top
  common.mark_started()
  names = {"InputExample", "InputFeatures", "PaddingInputExample", "DataProcessor",
           "MrpcProcessor", "ColaProcessor", "convert_single_example",
           "file_based_convert_examples_to_features", "file_based_input_fn_builder",
           "_truncate_seq_pair", "create_model"}
  ns = bench_model.original_functions(args, "run_classifier.py", names, {
      "tf": tf, "modeling": modeling, "tokenization": tokenization, "collections": collections,
      "os": os, "csv": csv})
  header, a, b, label, labels = COLUMNS[args.task]

  class GlueProcessor(ns["DataProcessor"]):
    """SST-2 and RTE, which the original has no processor for, read as its
    own processors read files."""

    def _examples(self, data_dir, name):
      rows = self._read_tsv(os.path.join(data_dir, name + ".tsv"))[int(header):]
      return [ns["InputExample"]("%s-%d" % (name, i), tokenization.convert_to_unicode(r[a]),
                                 tokenization.convert_to_unicode(r[b]) if b else None,
                                 tokenization.convert_to_unicode(r[label]))
              for i, r in enumerate(rows)]

    def get_train_examples(self, data_dir):
      return self._examples(data_dir, "train")

    def get_dev_examples(self, data_dir):
      return self._examples(data_dir, "dev")

    def get_labels(self):
      return labels

  processor = {"MRPC": ns["MrpcProcessor"], "CoLA": ns["ColaProcessor"]}.get(
      args.task, GlueProcessor)()
  tokenizer = tokenization.FullTokenizer(args.vocab_file, do_lower_case=True)
  config = modeling.BertConfig.from_json_file(args.bert_config_file)
  os.makedirs(args.output_dir, exist_ok=True)
  if args.train:
    examples = processor.get_train_examples(args.data_dir)
    steps = int(len(examples) / BATCH)
  else:
    examples = processor.get_dev_examples(args.data_dir)
  record_file = os.path.join(args.output_dir, "train.tf_record" if args.train else "eval.tf_record")
  ns["file_based_convert_examples_to_features"](examples, labels, SEQ, tokenizer, record_file)
  input_fn = ns["file_based_input_fn_builder"](record_file, SEQ, args.train, args.train)
  features = tf.data.make_one_shot_iterator(
      input_fn({"batch_size": BATCH if args.train else EVAL_BATCH})).get_next()
  loss, _, logits, _ = ns["create_model"](
      config, args.train, features["input_ids"], features["input_mask"],
      features["segment_ids"], features["label_ids"], len(labels), False)
  if args.train:
    train_op = optimization.create_optimizer(loss, LEARNING_RATE, steps, int(WARMUP * steps),
                                             False)
  saver = tf.train.Saver()
  with tf.Session() as session:
    if args.train:
      session.run(tf.global_variables_initializer())
      for _ in range(steps):
        session.run(train_op)
      saver.save(session, os.path.join(args.output_dir, "model.ckpt"), global_step=steps)
      result = {"steps": steps}
    else:
      saver.restore(session, tf.train.latest_checkpoint(args.output_dir))
      correct = 0
      correct_op = tf.reduce_sum(tf.cast(tf.equal(
          tf.argmax(logits, -1, output_type=tf.int32), features["label_ids"]), tf.int32))
      try:
        while True:
          correct += session.run(correct_op)
      except tf.errors.OutOfRangeError:
        pass
      result = {"accuracy": correct / len(examples)}
  common.cleanup(code_dir)
  return result


def worker_tf_models_records(args):
  """tf-models' records and meta data for one task, as its
  create_finetuning_data writes them."""
  from official.nlp.data import classifier_data_lib  # pylint: disable=g-import-not-at-top
  from official.nlp.tools import tokenization  # pylint: disable=g-import-not-at-top
  labels = COLUMNS[args.task][4]

  class TsvProcessor(classifier_data_lib.DataProcessor):
    """The task's TSV files, read as tf-models' own processors read theirs."""

    def _examples(self, name):
      return [classifier_data_lib.InputExample("%s-%d" % (name, i), a, b, label)
              for i, (a, b, label) in enumerate(read_rows(
                  args.task, os.path.join(args.data_dir, name + ".tsv")))]

    def get_train_examples(self, data_dir):
      return self._examples("train")

    def get_dev_examples(self, data_dir):
      return self._examples("dev")

    def get_labels(self):
      return labels

    @staticmethod
    def get_processor_name():
      return args.task

  os.makedirs(args.output_dir, exist_ok=True)
  meta = classifier_data_lib.generate_tf_record_from_data_file(
      TsvProcessor(), args.data_dir,
      tokenization.FullTokenizer(args.vocab_file, do_lower_case=True),
      train_data_output_path=os.path.join(args.output_dir, "train.tf_record"),
      eval_data_output_path=os.path.join(args.output_dir, "eval.tf_record"),
      max_seq_length=SEQ)
  with open(os.path.join(args.output_dir, "meta.json"), "w") as f:
    json.dump(meta, f)
  return meta


def worker(args):
  work = {"hf": worker_hf, "original": worker_original,
          "tf_models": worker_tf_models_records}[args.peer]
  result = work(args)
  common.report_result(result)


# ---------------------------------------------------------------- driver


def ours_command(args, peer, task, data_dir, output_dir, train):
  # `python run_classifier.py FLAGS`, marking the end of its imports. The XLA
  # cache: ours/warm's is the one ours filled, the others start empty.
  cache = os.path.join(os.path.dirname(output_dir), "xla_cache",
                       "ours" if peer == "ours/warm" else peer.replace("/", "_"))
  command = [sys.executable, "-c",
             "import sys, run_classifier, common; common.mark_started(); "
             "sys.argv[0] = 'run_classifier.py'; run_classifier.cli_main()",
             "--task_name=" + task,
             "--data_dir=" + data_dir, "--vocab_file=" + args.vocab_file,
             "--bert_config_file=" + args.bert_config_file, "--output_dir=" + output_dir,
             "--max_seq_length=%d" % SEQ, "--train_batch_size=%d" % BATCH,
             "--eval_batch_size=%d" % EVAL_BATCH, "--learning_rate=%g" % LEARNING_RATE,
             "--num_train_epochs=1", "--warmup_proportion=%g" % WARMUP,
             "--xla_cache_dir=" + cache, "--do_train" if train else "--do_eval"]
  if peer == "ours/fixed":
    command.append("--pad_to_max_seq_length")
  return command


def run_command(command, label):
  """Runs `command`; (seconds, what it reported or read, seconds after its
  start-up, CPU seconds the host took meanwhile) or None."""
  env = common.worker_env()
  stolen = common.host_stolen_seconds()
  start = time.perf_counter()
  result = subprocess.run(command, cwd=common.REPO_ROOT, capture_output=True, text=True,
                          env=env)
  seconds = time.perf_counter() - start
  stolen = common.stolen_between(stolen, common.host_stolen_seconds())
  after_start = common.seconds_after_start(result.stdout, time.time())
  if result.returncode:
    sys.stderr.write("%s failed:\n%s\n" % (label, result.stderr[-3000:]))
    return None
  reported = [l for l in result.stdout.splitlines() if l.startswith("RESULT ")]
  return seconds, json.loads(reported[-1][7:]) if reported else {}, after_start, stolen


def tf_models_commands(args, task, data_dir, output_dir):
  python = environments.interpreter("tf_models")
  return [
      [python, "-m", "bench.bench_finetune_glue", "--worker", "--peer=tf_models", "--task=" + task,
       "--data_dir=" + data_dir, "--output_dir=" + output_dir,
       "--vocab_file=" + args.vocab_file],
      [python, "-m", "official.legacy.bert.run_classifier", "--mode=train_and_eval",
       "--input_meta_data_path=" + os.path.join(output_dir, "meta.json"),
       "--train_data_path=" + os.path.join(output_dir, "train.tf_record"),
       "--eval_data_path=" + os.path.join(output_dir, "eval.tf_record"),
       "--bert_config_file=" + args.bert_config_file,
       "--model_dir=" + os.path.join(output_dir, "model"),
       "--train_batch_size=%d" % BATCH, "--eval_batch_size=%d" % EVAL_BATCH,
       "--learning_rate=%g" % LEARNING_RATE, "--num_train_epochs=1",
       "--distribution_strategy=one_device", "--num_gpus=0"]]


def measure_tf_models(args, task, data_dir, output_dir):
  """tf-models trains and evaluates in one command: the seconds of its two
  commands, and the dev accuracy Keras prints."""
  seconds, log = 0.0, ""
  for command in tf_models_commands(args, task, data_dir, output_dir):
    env = common.worker_env(TF_USE_LEGACY_KERAS="1")
    start = time.perf_counter()
    result = subprocess.run(command, cwd=output_dir if os.path.isdir(output_dir) else None,
                            capture_output=True, text=True, env=env)
    seconds += time.perf_counter() - start
    if result.returncode:
      sys.stderr.write("tf_models %s failed:\n%s\n" % (task, result.stderr[-3000:]))
      return None
    log = result.stdout
  accuracies = re.findall(r"val_accuracy: ([0-9.]+)", log)  # Keras's progress line.
  return {"train_and_eval_seconds": seconds,
          "accuracy": float(accuracies[-1]) if accuracies else float("nan")}


def peer_command(args, peer, task, data_dir, output_dir, train):
  if peer.startswith("ours"):
    return ours_command(args, peer, task, data_dir, output_dir, train)
  return [environments.interpreter(peer), "-m", "bench.bench_finetune_glue", "--worker",
          "--peer=" + peer, "--task=" + task, "--data_dir=" + data_dir,
          "--output_dir=" + output_dir, "--vocab_file=" + args.vocab_file,
          "--bert_config_file=" + args.bert_config_file,
          "--original_dir=%s" % args.original_dir] + (["--train"] if train else [])


def measure_task(args, peers, task, data_dir, scratch):
  """{peer: seconds and dev accuracy} on one task: each peer trains once,
  then the evaluations run --eval_rounds times, peers taking turns (the
  medians count: an evaluation lasts seconds, and this machine's speed
  drifts by more than the differences)."""
  results, evals = {}, {}
  output_dirs = {peer: os.path.join(scratch, task, peer.replace("/", "_")) for peer in peers}
  for peer in peers:
    if peer == "tf_models":
      outcome = measure_tf_models(args, task, data_dir, output_dirs[peer])
    else:
      outcome = run_command(peer_command(args, peer, task, data_dir, output_dirs[peer], True),
                            "%s %s train" % (peer, task))
      outcome = outcome and {"train_seconds": outcome[0], "train_after_start": outcome[2],
                             "train_host_stolen_s": outcome[3]}
    if outcome:
      results[peer] = outcome
      evals[peer] = []
  for _ in range(args.eval_rounds):
    for peer in [p for p in evals if p != "tf_models"]:
      outcome = run_command(
          peer_command(args, peer, task, data_dir, output_dirs[peer], False),
          "%s %s eval" % (peer, task))
      if outcome is None:
        results.pop(peer, None)
        evals.pop(peer)
        continue
      evals[peer].append(outcome)
  for peer, runs in evals.items():
    if not runs:
      continue
    accuracy = runs[-1][1].get("accuracy")
    if accuracy is None:  # Ours writes it where users read it.
      with open(os.path.join(output_dirs[peer], "eval_results.txt")) as f:
        accuracy = float(dict(l.strip().split(" = ") for l in f)["eval_accuracy"])
    results[peer].update(
        accuracy=accuracy, eval_seconds=statistics.median(r[0] for r in runs),
        eval_after_start=statistics.median(r[2] for r in runs),
        eval_rounds=[round(r[0], 2) for r in runs],
        eval_host_stolen_s=[r[3] for r in runs])
  return results


def main():
  parser = common.real_data_parser(__doc__.split("\n")[0], "finetune_glue.json")
  parser.add_argument("--tasks", default="SST-2,CoLA,MRPC,RTE")
  parser.add_argument("--max_train_rows", type=int, default=16000)
  parser.add_argument("--peers", default=",".join(PEERS))
  parser.add_argument("--eval_rounds", type=int, default=3)
  parser.add_argument("--worker", action="store_true")
  parser.add_argument("--peer")
  parser.add_argument("--task")
  parser.add_argument("--data_dir")
  parser.add_argument("--output_dir")
  parser.add_argument("--train", action="store_true")
  args = parser.parse_args()
  if args.worker:
    return worker(args)
  if (any(common.skipped("finetune_glue", os.path.join(args.glue_dir, task, "train.tsv"),
                         common.GLUE_WHERE) for task in args.tasks.split(",")) or
      common.skipped("finetune_glue", args.bert_config_file, common.CONFIG_WHERE)):
    return
  peers = [p for p in args.peers.split(",") if p != "original" or args.original_dir]
  if "ours/warm" in peers and ("ours" not in peers or peers.index("ours") > peers.index(
      "ours/warm")):
    parser.error("--peers: ours/warm loads what ours compiled: list ours before it")
  results = {}
  with tempfile.TemporaryDirectory() as scratch:
    for task in args.tasks.split(","):
      data_dir = os.path.join(scratch, task, "data")
      rows = task_data(args.glue_dir, task, data_dir, args.max_train_rows)
      for peer, outcome in measure_task(args, peers, task, data_dir, scratch).items():
        results.setdefault(task, {"train_rows": rows})[peer] = outcome
        if "train_and_eval_seconds" in outcome:
          timing = "train + eval %7.1f s        " % outcome["train_and_eval_seconds"]
        else:
          timing = "train %7.1f s  eval %6.1f s (after start-up %.1f / %.1f s)" % (
              outcome["train_seconds"], outcome["eval_seconds"],
              outcome["train_after_start"], outcome["eval_after_start"])
        stolen = outcome.get("train_host_stolen_s")
        print("%-6s %-11s %s  dev accuracy %.3f%s" % (
            task, peer, timing, outcome["accuracy"],
            "" if stolen is None else "  (host took %.1f s of CPU in training)" % stolen),
              flush=True)
  print("\nOne epoch + dev evaluation, whole commands, %s (ratio: theirs / ours, "
        "above 1 ours faster)" % os.path.basename(args.bert_config_file))
  for task, by_peer in results.items():
    for base in ("ours", "ours/warm"):
      print_ratios(task, by_peer, base, peers)
  common.write_text(args.output, json.dumps(results, indent=2) + "\n")


def print_ratios(task, by_peer, base, peers):
  """One line per peer: its seconds / `base`'s."""
  ours = by_peer.get(base)
  for peer in peers:
    r = by_peer.get(peer)
    if not r or peer in ("ours", "ours/warm") or not ours:
      continue
    if "train_and_eval_seconds" in r:
      print("  %-6s (%5d rows) %-9s vs %-11s train + eval %.2fx" % (
          task, by_peer["train_rows"], base, peer, r["train_and_eval_seconds"] / (
              ours["train_seconds"] + ours["eval_seconds"])))
      continue
    print("  %-6s (%5d rows) %-9s vs %-11s train %.2fx  eval %.2fx   after start-up: "
          "train %.2fx  eval %.2fx" % (
              task, by_peer["train_rows"], base, peer, r["train_seconds"] / ours["train_seconds"],
              r["eval_seconds"] / ours["eval_seconds"],
              r["train_after_start"] / ours["train_after_start"],
              r["eval_after_start"] / ours["eval_after_start"]))


if __name__ == "__main__":
  main()
