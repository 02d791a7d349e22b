"""Serving latency on real requests: the dev sentences of SST-2 and MRPC, one
request at a time, tokenizer included, ours against Hugging Face eager.

  python -m bench.bench_serving_dev [--size=base] [--requests=200] [--tasks=SST-2,MRPC]
                                    [--rounds=3]

Every peer gets the same random-weight BERT (`--size`, as bench_model.py)
and the same requests: the first `--requests` rows of each task's dev.tsv in
../shared/data/glue, sent one by one (batch 1) from a fresh process, after a
warm-up. Peers:
  ours            run_classifier.py's export (serving_default: raw text in),
                  loaded with TensorFlow and tensorflow-text only; the model
                  runs at the request's length;
  ours/fixed      the same export, but the model run at max_seq_length (128),
                  as before length-aware serving: what trimming saves;
  ours/bf16       --export_precision=bfloat16;
  hf              Hugging Face eager as its pipelines run: BertTokenizerFast
                  and BertForSequenceClassification, no padding, torch
                  inference mode;
  hf/bf16         the same with the model's weights in bfloat16.
Our exports run as docs/serving.md advises a server to run them: with
TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1, so TensorFlow's oneDNN matrix products
keep each weight matrix in their own layout after the first request instead
of converting it on every call (`--no-frozen_weights`: without it).
Every peer runs once per round (`--rounds`, the order reversed every other
round); prints the medians over rounds of p50 and p95 per peer and task,
each round's p50, and our ratios (above 1: ours faster); then, per round,
the CPU seconds the host gave to other machines while each peer ran (a
round that lost many is the host's doing, not the peer's).
CPU: bfloat16 pays only where the CPU multiplies in bfloat16 (AVX512-BF16,
AMX); the line `cpu:` says what this one has.
"""

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from bench import common
from bench import environments

PEERS = ("ours", "ours/fixed", "ours/bf16", "hf", "hf/bf16")
MAX_SEQ_LENGTH = 128
# The text columns of each task's dev.tsv (the files have a header).
COLUMNS = {"SST-2": (0, None), "MRPC": (3, 4)}


def dev_requests(glue_dir, task, count):
  """(text_a, text_b) of the first `count` dev rows ("" for single sentences)."""
  path = os.path.join(glue_dir, task, "dev.tsv")
  with open(path, encoding="utf-8-sig") as f:
    rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:count + 1]
  a, b = COLUMNS[task]
  return [(row[a], row[b] if b is not None else "") for row in rows]


def percentiles(seconds):
  ordered = sorted(seconds)
  return {"p50": 1000 * statistics.median(ordered),
          "p95": 1000 * ordered[int(0.95 * (len(ordered) - 1))]}


def timed_requests(call, requests, warmup=10):
  for text_a, text_b in requests[:warmup]:
    call(text_a, text_b)
  seconds = []
  for text_a, text_b in requests:
    start = time.perf_counter()
    call(text_a, text_b)
    seconds.append(time.perf_counter() - start)
  return percentiles(seconds)


# ---------------------------------------------------------------- exports


def export_ours(args, directory):
  """The three exports of one random-weight classifier: float32, bfloat16
  and float32 run at max_seq_length (the last is built here: the project
  no longer exports one)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from bench import bench_model  # pylint: disable=g-import-not-at-top
  import modeling  # pylint: disable=g-import-not-at-top
  from serving import classifier  # pylint: disable=g-import-not-at-top
  from serving import export  # pylint: disable=g-import-not-at-top
  config = modeling.BertConfig.from_dict(
      dict(bench_model.config_dict(args.size), vocab_size=bench_model.VOCAB))
  model = modeling.BertClassifier(config, num_labels=2)
  for name, precision in (("ours", "float32"), ("ours_bf16", "bfloat16")):
    classifier.export_classifier(model, os.path.join(directory, name), args.vocab_file,
                                 True, MAX_SEQ_LENGTH, ["0", "1"], precision=precision)

  class FixedLengthServer(classifier.ClassifierServer):
    def outputs(self, features):
      logits = tf.cast(self.model(features, training=False)["logits"], tf.float32)
      probabilities = tf.nn.softmax(logits, axis=-1)
      return {"probabilities": probabilities,
              "label": tf.gather(self.labels, tf.argmax(probabilities, axis=-1))}
  server = FixedLengthServer(model, export.graph_tokenizer(args.vocab_file, True),
                             MAX_SEQ_LENGTH, ["0", "1"])
  export.save(server, os.path.join(directory, "ours_fixed"),
              classifier.classifier_signatures(server))


# ---------------------------------------------------------------- workers


def worker_ours(args, requests):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tensorflow_text  # noqa: F401 pylint: disable=g-import-not-at-top,unused-import
  serve = tf.saved_model.load(args.export_dir).signatures["serving_default"]

  def call(text_a, text_b):
    outputs = serve(text_a=tf.constant([text_a]), text_b=tf.constant([text_b]))
    return outputs["probabilities"].numpy()
  return timed_requests(call, requests)


def worker_hf(args, requests, bfloat16):
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  sizes = json.loads(args.config)
  config = transformers.BertConfig(
      vocab_size=sizes["vocab_size"], hidden_size=sizes["hidden_size"],
      num_hidden_layers=sizes["num_hidden_layers"],
      num_attention_heads=sizes["num_attention_heads"],
      intermediate_size=sizes["intermediate_size"], hidden_act="gelu_new",
      max_position_embeddings=512, type_vocab_size=2, num_labels=2)
  model = transformers.BertForSequenceClassification(config).eval()
  if bfloat16:
    model = model.to(torch.bfloat16)
  tokenizer = transformers.BertTokenizerFast(args.vocab_file, do_lower_case=True)

  def call(text_a, text_b):
    inputs = tokenizer(text_a, text_b or None, truncation=True, max_length=MAX_SEQ_LENGTH,
                       return_tensors="pt")
    with torch.inference_mode():
      return model(**inputs).logits.float().softmax(-1).numpy()
  return timed_requests(call, requests)


def worker(args):
  requests = dev_requests(args.glue_dir, args.task, args.requests)
  if args.peer.startswith("hf"):
    result = worker_hf(args, requests, args.peer == "hf/bf16")
  else:
    result = worker_ours(args, requests)
  print("RESULT " + json.dumps(result))


# ---------------------------------------------------------------- driver


def cpu_line():
  with open("/proc/cpuinfo", encoding="utf-8") as f:
    text = f.read()
  model = next((l.split(":", 1)[1].strip() for l in text.splitlines()
                if l.startswith("model name")), "unknown")
  flags = [f for f in ("avx512_bf16", "amx_bf16") if " %s " % f in text]
  return "%s; bfloat16 arithmetic: %s" % (model, ", ".join(flags) or "none")


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--size", default="base")
  parser.add_argument("--requests", type=int, default=200)
  parser.add_argument("--tasks", default="SST-2,MRPC")
  parser.add_argument("--peers", default=",".join(PEERS))
  parser.add_argument("--vocab_file", default=common.VOCAB)
  parser.add_argument("--glue_dir", default=os.path.join(common.SHARED_DATA, "glue"))
  parser.add_argument("--frozen_weights", action=argparse.BooleanOptionalAction,
                      default=True)
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--worker", action="store_true")
  parser.add_argument("--peer")
  parser.add_argument("--task")
  parser.add_argument("--export_dir")
  parser.add_argument("--config")
  args = parser.parse_args()
  if args.worker:
    return worker(args)
  if any(common.skipped("serving_dev", os.path.join(args.glue_dir, task, "dev.tsv"),
                        common.GLUE_WHERE) for task in args.tasks.split(",")):
    return

  from bench import bench_model  # pylint: disable=g-import-not-at-top
  config = json.dumps(dict(bench_model.config_dict(args.size), vocab_size=bench_model.VOCAB))
  peers = args.peers.split(",")
  print("cpu: " + cpu_line())
  print("ours: TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=%d" % args.frozen_weights)
  results = {}
  with tempfile.TemporaryDirectory() as scratch:
    export_ours(args, scratch)
    for round_index in range(args.rounds):
      # Every peer once per round, in reverse order every other round: a
      # machine whose speed drifts moves every peer's figures alike.
      for peer in peers if round_index % 2 == 0 else peers[::-1]:
        for task in args.tasks.split(","):
          result = run_worker(args, scratch, config, peer, task)
          if result:
            results.setdefault((task, peer), []).append(result)
  print("\nBERT-%s classifier, batch 1, %d dev requests each, tokenizer included, medians "
        "of %d rounds (ms; ratio: theirs / ours, above 1 ours faster)" % (
            args.size, args.requests, args.rounds))
  summary = {key: {q: statistics.median(r[q] for r in rounds) for q in ("p50", "p95")}
             for key, rounds in results.items()}
  for task in args.tasks.split(","):
    ours = summary.get((task, "ours"))
    for peer in peers:
      r = summary.get((task, peer))
      if not r:
        continue
      ratio = ("  %.2fx" % (r["p50"] / ours["p50"])) if ours and peer != "ours" else "      "
      print("  %-6s %-11s p50 %7.1f  p95 %7.1f%s   rounds' p50: %s" % (
          task, peer, r["p50"], r["p95"], ratio,
          " / ".join("%.1f" % x["p50"] for x in results[task, peer])))
  stolen = {key: [r.get("host_stolen_s") for r in rounds] for key, rounds in results.items()}
  if any(s is not None for rounds in stolen.values() for s in rounds):
    print("\nCPU seconds the host took from this machine while each peer ran, by round:")
    for (task, peer), rounds in stolen.items():
      print("  %-6s %-11s %s" % (task, peer, " / ".join(
          "?" if s is None else "%.1f" % s for s in rounds)))


def run_worker(args, scratch, config, peer, task):
  """One peer's timings of one task's requests, from a fresh process."""
  python = environments.interpreter("hf") if peer.startswith("hf") else sys.executable
  export_dir = os.path.join(scratch, peer.replace("/", "_"))
  cmd = [python, "-m", "bench.bench_serving_dev", "--worker", "--peer=" + peer,
         "--task=" + task, "--requests=%d" % args.requests,
         "--vocab_file=" + args.vocab_file, "--export_dir=" + export_dir,
         "--config=" + config, "--glue_dir=" + args.glue_dir]
  # Workers load our exports with TensorFlow and tensorflow-text alone, as
  # TF Serving does: the repository is on the module path for this module only.
  env = common.worker_env()
  env.pop("TF_ONEDNN_ASSUME_FROZEN_WEIGHTS", None)
  if args.frozen_weights and peer.startswith("ours"):
    env["TF_ONEDNN_ASSUME_FROZEN_WEIGHTS"] = "1"
  stolen = common.host_stolen_seconds()
  result = subprocess.run(cmd, cwd=scratch, capture_output=True, text=True, env=env)
  stolen = common.stolen_between(stolen, common.host_stolen_seconds())
  lines = [l for l in result.stdout.splitlines() if l.startswith("RESULT ")]
  if result.returncode or not lines:
    print("%s/%s failed:\n%s" % (task, peer, result.stderr[-2000:]))
    return None
  return dict(json.loads(lines[-1][7:]), host_stolen_s=stolen)

if __name__ == "__main__":
  main()
