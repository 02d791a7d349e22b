"""Serving on real requests: the dev sentences of SST-2 and MRPC, text in and
probabilities out, tokenizer included; latency one request at a time and
throughput in batches; ours against Hugging Face eager and ONNX Runtime.

  python -m bench.bench_serving_dev [--size=base] [--requests=200] [--tasks=SST-2,MRPC]
                                    [--batch_size=32] [--batches=20] [--batch_tasks=SST-2]
                                    [--rounds=3] [--peers=ours,ours/fixed,...]

Every peer runs the same random-weight BERT classifier (`--size`, as
bench_model.py): ours builds it and exports it, and its weights go to the
other peers as a Hugging Face directory (bert-convert-checkpoint's writer),
so that all of them compute the same probabilities. The requests are rows of
each task's dev.tsv in ../shared/data/glue, sent from a fresh process per
peer after a warm-up, in two rows:
  batch 1         the first `--requests` rows of each of `--tasks`, one by
                  one: latency, p50 and p95;
  batch 32        `--batches` batches of `--batch_size` rows of each of
                  `--batch_tasks` ("" for none), each padded to its longest:
                  throughput, sentences per second.
Peers:
  ours            run_classifier.py's export (serving_default: raw text in),
                  loaded with TensorFlow and tensorflow-text only; the model
                  runs at the longest request's length;
  ours/fixed      the same export, but the model run at max_seq_length (128),
                  as before length-aware serving: what trimming saves;
  ours/bf16       --export_precision=bfloat16;
  hf              Hugging Face eager as its pipelines run: BertTokenizerFast
                  and BertForSequenceClassification, no padding of one
                  request, torch inference mode;
  hf/bf16         the same with the model's weights in bfloat16;
  ort             ONNX Runtime as a CPU user deploys BERT: the same
                  BertForSequenceClassification (eager attention) exported by
                  torch.onnx (opset 17, dynamic batch and sequence axes),
                  onnxruntime.transformers.optimizer (model_type "bert"), an
                  InferenceSession with one intra-op thread per core; the same
                  fast tokenizer, no padding of one request. float32.
Our exports run as docs/serving.md advises a server to run them: with
TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1, so TensorFlow's oneDNN matrix products
keep each weight matrix in their own layout after the first request instead
of converting it on every call (`--no-frozen_weights`: without it).
Every peer runs once per round (`--rounds`, the order reversed every other
round). Prints, and writes to `--output` (Markdown; every round's figures in
the JSON file beside it): per row and task, each peer's medians over rounds
and each round's figure, and how many times better ours is than each peer
with the range of the rounds' own ratios (as bench/README.md reads them); the
largest difference of each peer's probabilities from ours; the node counts of
ORT's optimized graph by op type (what its optimizer fused); the share of
the machine's float32 matmul peak (bench_matmul.py) each peer reached; per round, the
CPU seconds the host gave to other machines while each peer ran (a round
that lost many is the host's doing, not the peer's).
CPU: bfloat16 pays only where the CPU multiplies in bfloat16 (AVX512-BF16,
AMX); the line `cpu:` says what this one has.
"""

import argparse
import collections
import csv
import functools
import json
import os
import statistics
import subprocess
import tempfile
import time

from bench import common
from bench import environments

PEERS = ("ours", "ours/fixed", "ours/bf16", "hf", "hf/bf16", "ort")
MAX_SEQ_LENGTH = 128
# The text columns of each task's dev.tsv (the files have a header).
COLUMNS = {"SST-2": (0, None), "MRPC": (3, 4)}
# The ONNX graph's inputs, in BertForSequenceClassification.forward's order.
ONNX_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# ORT's fused operators (BiasGelu is the erf GELU with its bias, FastGelu the
# tanh form that these weights' config names), then the products left.
FUSED_OPS = ("Attention", "EmbedLayerNormalization", "SkipLayerNormalization", "BiasGelu",
             "FastGelu", "MatMul", "Gemm")


def dev_requests(glue_dir, task, count):
  """(text_a, text_b) of the first `count` dev rows ("" for single sentences)."""
  path = os.path.join(glue_dir, task, "dev.tsv")
  with open(path, encoding="utf-8-sig") as f:
    rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:count + 1]
  a, b = COLUMNS[task]
  return [(row[a], row[b] if b is not None else "") for row in rows]


def in_batches(requests, size):
  """Consecutive batches of `size` requests (the last may be shorter)."""
  return [requests[i:i + size] for i in range(0, len(requests), size)]


def percentiles(seconds):
  ordered = sorted(seconds)
  return {"p50": 1000 * statistics.median(ordered),
          "p95": 1000 * ordered[int(0.95 * (len(ordered) - 1))],
          "mean": 1000 * statistics.fmean(ordered)}


def call(predict, requests):
  """The probabilities `predict` gives a batch of (text_a, text_b)."""
  return predict([a for a, _ in requests], [b for _, b in requests])


def timed_requests(predict, requests, warmup=10):
  """Latency of one request at a time, and every answer."""
  for request in requests[:warmup]:
    call(predict, [request])
  seconds, probabilities = [], []
  for request in requests:
    start = time.perf_counter()
    answer = call(predict, [request])
    seconds.append(time.perf_counter() - start)
    probabilities.extend(answer.tolist())
  return dict(percentiles(seconds), probabilities=probabilities)


def timed_batches(predict, batches, warmup=1):
  """Sentences per second over `batches`, and every answer."""
  for batch in batches[:warmup]:
    call(predict, batch)
  seconds, probabilities = 0.0, []
  for batch in batches:
    start = time.perf_counter()
    answer = call(predict, batch)
    seconds += time.perf_counter() - start
    probabilities.extend(answer.tolist())
  return {"sentences_per_s": len(probabilities) / seconds, "probabilities": probabilities}


# ---------------------------------------------------------------- models


def export_ours(args, model, directory):
  """The three exports of our classifier: float32, bfloat16 and float32 run
  at max_seq_length (the last is built here: the project no longer exports
  one)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from serving import classifier  # pylint: disable=g-import-not-at-top
  from serving import export  # pylint: disable=g-import-not-at-top
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


def write_hf_directory(args, model, config, directory):
  """Our classifier's weights as a Hugging Face directory, which the hf and
  ort peers load: every peer runs the same model."""
  from modeling.checkpoints import huggingface  # pylint: disable=g-import-not-at-top
  tensors = {name: variable.numpy() for name, variable in model.original_names().items()}
  with open(args.vocab_file, encoding="utf-8") as f:
    vocab = f.read()
  huggingface.write_directory(directory, config.to_dict(), tensors, vocab, True,
                              "BertForSequenceClassification")


def export_onnx(args):
  """The Hugging Face directory `--model` to ONNX, optimized by ORT's
  transformer optimizer into `--export_onnx`; returns the optimized graph's
  node counts by op type. Runs in the ort environment."""
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  from onnxruntime.transformers import optimizer  # pylint: disable=g-import-not-at-top
  # Eager attention: the form ORT's optimizer fuses into its Attention op.
  model = transformers.BertForSequenceClassification.from_pretrained(
      args.model, attn_implementation="eager").eval()
  example = encode(fast_tokenizer(args.vocab_file), ["a request"], ["and its pair"], "pt")
  exported = os.path.join(os.path.dirname(args.export_onnx), "exported.onnx")
  # The TorchScript exporter (dynamo=False): its graph is the one ORT's
  # optimizer matches; torch.export's is left with unfused attention.
  torch.onnx.export(model, tuple(example[name] for name in ONNX_INPUTS), exported,
                    input_names=list(ONNX_INPUTS), output_names=["logits"],
                    dynamic_axes={name: {0: "batch", 1: "sequence"} for name in ONNX_INPUTS},
                    opset_version=17, dynamo=False)
  optimized = optimizer.optimize_model(
      exported, model_type="bert", num_heads=model.config.num_attention_heads,
      hidden_size=model.config.hidden_size)
  optimized.save_model_to_file(args.export_onnx)
  return dict(collections.Counter(node.op_type for node in optimized.model.graph.node))


# ---------------------------------------------------------------- workers


def fast_tokenizer(vocab_file):
  import transformers  # pylint: disable=g-import-not-at-top
  return transformers.BertTokenizerFast(vocab_file, do_lower_case=True)


def encode(tokenizer, texts_a, texts_b, tensor_type):
  """Hugging Face's fast tokenizer as its pipelines call it: truncated to
  MAX_SEQ_LENGTH, a batch padded to its longest (so one request, not at all)."""
  return tokenizer(texts_a, texts_b if any(texts_b) else None, padding="longest",
                   truncation=True, max_length=MAX_SEQ_LENGTH, return_tensors=tensor_type)


def predictor_ours(args):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tensorflow_text  # noqa: F401 pylint: disable=g-import-not-at-top,unused-import
  serve = tf.saved_model.load(args.model).signatures["serving_default"]

  def predict(texts_a, texts_b):
    outputs = serve(text_a=tf.constant(texts_a), text_b=tf.constant(texts_b))
    return outputs["probabilities"].numpy()
  return predict


def predictor_hf(args, bfloat16=False):
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  model = transformers.BertForSequenceClassification.from_pretrained(args.model).eval()
  if bfloat16:
    model = model.to(torch.bfloat16)
  tokenizer = fast_tokenizer(args.vocab_file)

  def predict(texts_a, texts_b):
    inputs = encode(tokenizer, texts_a, texts_b, "pt")
    with torch.inference_mode():
      return model(**inputs).logits.float().softmax(-1).numpy()
  return predict


def predictor_ort(args):
  import numpy as np  # pylint: disable=g-import-not-at-top
  import onnxruntime  # pylint: disable=g-import-not-at-top
  options = onnxruntime.SessionOptions()
  # One thread per core, as TensorFlow and PyTorch use by default.
  options.intra_op_num_threads = os.cpu_count()
  session = onnxruntime.InferenceSession(args.model, options,
                                         providers=["CPUExecutionProvider"])
  tokenizer = fast_tokenizer(args.vocab_file)

  def predict(texts_a, texts_b):
    inputs = encode(tokenizer, texts_a, texts_b, "np")
    logits = session.run(["logits"], {name: inputs[name] for name in ONNX_INPUTS})[0]
    exponentials = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return exponentials / exponentials.sum(axis=-1, keepdims=True)
  return predict


PREDICTORS = {"ours": predictor_ours, "ours/fixed": predictor_ours,
              "ours/bf16": predictor_ours, "hf": predictor_hf,
              "hf/bf16": functools.partial(predictor_hf, bfloat16=True), "ort": predictor_ort}


def worker(args):
  predict = PREDICTORS[args.peer](args)
  requests = dev_requests(args.glue_dir, args.task, args.requests)
  if args.batch_size == 1:
    result = timed_requests(predict, requests)
  else:
    result = timed_batches(predict, in_batches(requests, args.batch_size))
  common.report_result(result)


# ---------------------------------------------------------------- driver


class Row(collections.namedtuple("Row", "task batch_size requests")):
  """One timed row of one task: its requests and the figure it compares."""

  @property
  def title(self):
    return "%s, batch %d" % (self.task, self.batch_size)

  @property
  def figure(self):
    return "p50" if self.batch_size == 1 else "sentences_per_s"

  def ours_better_by(self, ours, peer):
    """A latency: the peer's over ours; a throughput: ours over the peer's."""
    return peer / ours if self.batch_size == 1 else ours / peer


def timed_rows(args):
  return ([Row(task, 1, args.requests) for task in names(args.tasks)] +
          [Row(task, args.batch_size, args.batch_size * args.batches)
           for task in names(args.batch_tasks)])


def names(text):
  return [name for name in text.split(",") if name]


def environment_of(peer):
  """The peer environment whose interpreter runs `peer`'s worker."""
  family = peer.split("/")[0]
  return family if family in environments.PEERS else "ours"


def model_path(scratch, peer):
  """Where the driver puts what `peer` loads: our SavedModels, the Hugging
  Face directory, the optimized ONNX graph."""
  family = peer.split("/")[0]
  if family == "hf":
    return os.path.join(scratch, "hf")
  if family == "ort":
    return os.path.join(scratch, "ort", "model.onnx")
  return os.path.join(scratch, peer.replace("/", "_"))


def installed_peers(peers):
  """`peers` whose environments are installed; one line for each left out."""
  kept = []
  for peer in peers:
    environment = environment_of(peer)
    if environments.installed(environment):
      kept.append(peer)
    else:
      print("%s: skipped (no %s environment: python -m bench.environments --peers=%s)" % (
          peer, environment, environment))
  return kept


def prepare_models(args, scratch, peers):
  """Our exports and the Hugging Face directory, from one random-weight
  classifier; then, for ort, the optimized ONNX graph. Returns its node
  counts by op type (None without ort, or when its export failed)."""
  import modeling  # pylint: disable=g-import-not-at-top
  from bench import bench_model  # pylint: disable=g-import-not-at-top
  config = modeling.BertConfig.from_dict(
      dict(bench_model.config_dict(args.size), vocab_size=bench_model.VOCAB))
  model = modeling.BertClassifier(config, num_labels=2)
  export_ours(args, model, scratch)
  write_hf_directory(args, model, config, model_path(scratch, "hf"))
  if "ort" not in peers:
    return None
  onnx_file = model_path(scratch, "ort")
  os.makedirs(os.path.dirname(onnx_file))
  cmd = [environments.python_of("ort"), "-m", "bench.bench_serving_dev",
         "--export_onnx=" + onnx_file, "--model=" + model_path(scratch, "hf"),
         "--vocab_file=" + args.vocab_file]
  result = common.run_worker(cmd, "ort's ONNX export")
  return result and result["onnx_ops"]


def run_worker(args, scratch, peer, row):
  """One peer's figures on one row, from a fresh process; None if it failed."""
  cmd = [environments.python_of(environment_of(peer)), "-m", "bench.bench_serving_dev",
         "--worker", "--peer=" + peer, "--task=" + row.task,
         "--requests=%d" % row.requests, "--batch_size=%d" % row.batch_size,
         "--vocab_file=" + args.vocab_file, "--model=" + model_path(scratch, peer),
         "--glue_dir=" + args.glue_dir]
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
    print("%s/%s failed:\n%s" % (row.title, peer, result.stderr[-2000:]))
    return None
  return dict(json.loads(lines[-1][len("RESULT "):]), host_stolen_s=stolen)


def run_rounds(args, scratch, peers):
  """{(row, peer): one result per round, None where the worker failed (a
  gap keeps the rounds paired)}."""
  results = collections.defaultdict(list)
  for round_index in range(args.rounds):
    # Every peer once per round, in reverse order every other round: a
    # machine whose speed drifts moves every peer's figures alike.
    for peer in peers if round_index % 2 == 0 else peers[::-1]:
      for row in timed_rows(args):
        results[row, peer].append(run_worker(args, scratch, peer, row))
  return results


def sequence_flops(size, length):
  """Multiply-adds x 2 of one BERT-`size` sequence of `length` tokens: the
  layers' products (query/key/value, output, feed-forward: 24 h^2 per token)
  and attention's two (4 n h per token), the pooler and the 2-way classifier."""
  from bench import bench_model  # pylint: disable=g-import-not-at-top
  layers, hidden, _ = bench_model.SIZES[size]
  per_layer = 24 * hidden * hidden * length + 4 * length * length * hidden
  return layers * per_layer + 2 * hidden * hidden + 4 * hidden


def row_flops(args, row):
  """FLOPs of one row's work for one request (batch 1: the mean over the
  requests) or one sentence (batches: each padded to its longest), at the
  lengths our tokenizer gives the requests, [CLS] and [SEP] included."""
  from data_prep import tokenization  # pylint: disable=g-import-not-at-top
  tokenizer = tokenization.FullTokenizer(args.vocab_file, do_lower_case=True)
  requests = dev_requests(args.glue_dir, row.task, row.requests)
  lengths = [min(MAX_SEQ_LENGTH, 2 + len(tokenizer.tokenize(a)) +
                 (1 + len(tokenizer.tokenize(b)) if b else 0)) for a, b in requests]
  if row.batch_size == 1:
    return statistics.fmean(sequence_flops(args.size, n) for n in lengths)
  padded = [len(batch) * sequence_flops(args.size, max(batch))
            for batch in in_batches(lengths, row.batch_size)]
  return sum(padded) / len(lengths)


def matmul_peak(peers):
  """GFLOP/s: the better of TensorFlow's and PyTorch's float32 matmul with
  every core (bench_matmul.py), each in its peer's environment."""
  figures = {}
  for environment, framework in (("ours", "tf"), ("hf", "torch")):
    if environment == "ours" or any(environment_of(p) == environment for p in peers):
      cmd = [environments.python_of(environment), "-m", "bench.bench_matmul",
             "--framework=" + framework]
      result = common.run_worker(cmd, "matmul/" + framework)
      if result:
        figures[framework] = result["gflops"]
  return figures


def peak_fractions(args, peers, results, peak):
  """One line per row: the share of the matmul peak each peer reached (mean
  latency at batch 1, throughput in batches)."""
  best = max(peak.values())
  lines = ["float32 matmul peak: %.0f GFLOP/s (%s). Share of it each peer reached "
           "(the model's FLOPs at the requests' lengths, over the mean latency at batch 1 "
           "or the throughput in batches):" % (best, ", ".join(
               "%s %.0f" % item for item in sorted(peak.items())))]
  for row in timed_rows(args):
    flops = row_flops(args, row)
    shares = []
    for peer in peers:
      if row.batch_size == 1:
        seconds = median_of(results.get((row, peer), []), "mean")
        seconds = seconds and seconds / 1000
      else:
        rate = median_of(results.get((row, peer), []), "sentences_per_s")
        seconds = rate and 1 / rate
      if seconds:
        shares.append("%s %.0f%%" % (peer, 100 * flops / seconds / 1e9 / best))
    lines.append("- %s (%.2f GFLOP per %s): %s" % (
        row.title, flops / 1e9, "request" if row.batch_size == 1 else "sentence",
        ", ".join(shares)))
  return "\n".join(lines)


def median_of(rounds, figure):
  values = [r[figure] for r in rounds if r]
  return statistics.median(values) if values else None


def row_table(row, peers, results):
  """One row's Markdown table: each peer's medians, its rounds' figures and
  how many times better ours is."""
  ours = [r and r[row.figure] for r in results.get((row, "ours"), [])]
  if row.batch_size == 1:
    lines = ["| peer | p50 ms | p95 ms | rounds' p50 | ours vs peer |", "|---|---:|---:|---|---|"]
  else:
    lines = ["| peer | sentences/s | rounds' | ours vs peer |", "|---|---:|---|---|"]
  for peer in peers:
    rounds = results.get((row, peer), [])
    if not any(rounds):
      lines.append("| %s | failed |" % peer)
      continue
    each = " / ".join("failed" if not r else "%.1f" % r[row.figure] for r in rounds)
    ratio = "" if peer == "ours" else common.ratio_with_spread(
        row.ours_better_by, ours, [r and r[row.figure] for r in rounds])
    medians = ["%.1f" % median_of(rounds, row.figure)]
    if row.batch_size == 1:
      medians.append("%.1f" % median_of(rounds, "p95"))
    lines.append("| %s | %s | %s | %s |" % (peer, " | ".join(medians), each, ratio))
  return "\n".join(lines)


def probability_differences(peers, results):
  """{peer: the largest difference of its probabilities from ours'}, over
  every row's requests (the first round each side finished)."""
  largest = {}
  for (row, peer), rounds in results.items():
    ours = next((r for r in results.get((row, "ours"), []) if r), None)
    theirs = next((r for r in rounds if r), None)
    if peer == "ours" or not ours or not theirs:
      continue
    difference = max(abs(a - b) for p, q in zip(ours["probabilities"], theirs["probabilities"])
                     for a, b in zip(p, q))
    largest[peer] = max(difference, largest.get(peer, 0.0))
  return {peer: largest[peer] for peer in peers if peer in largest}


def onnx_ops_line(onnx_ops):
  others = sum(count for op, count in onnx_ops.items() if op not in FUSED_OPS)
  return "ort's optimized graph, nodes by op type: %s; %d others (%s)." % (
      ", ".join("%d %s" % (onnx_ops.get(op, 0), op) for op in FUSED_OPS), others,
      ", ".join("%d %s" % (count, op) for op, count in sorted(onnx_ops.items())
                if op not in FUSED_OPS))


def host_share(results):
  """The CPU seconds the host took from this machine while each peer ran,
  per row and round; one sentence when it took none."""
  stolen = {key: [r and r.get("host_stolen_s") for r in rounds]
            for key, rounds in results.items()}
  seconds = [s for rounds in stolen.values() for s in rounds if s is not None]
  if not seconds:
    return "The host's share of the CPU is unknown here (no steal column in /proc/stat)."
  if max(seconds) < 0.05:
    return "The host took no CPU time from this machine while the peers ran."
  return "CPU seconds the host took from this machine while each peer ran, by round:\n\n" + (
      "\n".join("- %s, %s: %s" % (row.title, peer, " / ".join(
          "?" if s is None else "%.1f" % s for s in rounds))
                for (row, peer), rounds in stolen.items()))


def report(args, peers, results, onnx_ops, peak):
  """The Markdown report: a table per row, then the checks and the host's
  share."""
  parts = ["BERT-%s classifier, text in and probabilities out, tokenizer included, "
           "the same weights for every peer; medians of %d round%s. \"ours vs peer\": "
           "how many times better ours is (its latency over ours, or our throughput "
           "over its), in brackets the range of the rounds' own ratios; above 1 ours is "
           "faster. cpu: %s; ours: TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=%d." % (
               args.size.capitalize(), args.rounds, "" if args.rounds == 1 else "s",
               cpu_line(), args.frozen_weights)]
  for row in timed_rows(args):
    what = ("%d dev requests one at a time" % row.requests if row.batch_size == 1 else
            "%d dev sentences in batches of %d, each padded to its longest" % (
                row.requests, row.batch_size))
    parts.append("%s (%s):\n\n%s" % (row.title, what, row_table(row, peers, results)))
  differences = probability_differences(peers, results)
  if differences:
    parts.append("Largest difference of each peer's probabilities from ours: %s." % ", ".join(
        "%s %.1e" % item for item in differences.items()))
  if onnx_ops:
    parts.append(onnx_ops_line(onnx_ops))
  if peak:
    parts.append(peak_fractions(args, peers, results, peak))
  parts.append(host_share(results))
  return "\n\n".join(parts) + "\n"


def results_json(args, peers, results, onnx_ops, peak):
  """Every round's figures (without the probabilities), for the record."""
  pins = {e: environments.PEERS[e]["packages"] for e in sorted(set(map(environment_of, peers)))
          if e in environments.PEERS}
  return {"machine": common.machine(), "versions": pins, "size": args.size,
          "rounds": args.rounds, "matmul_peak_gflops": peak,
          "frozen_weights": args.frozen_weights, "peers": peers, "onnx_ops": onnx_ops,
          "probability_differences": probability_differences(peers, results),
          "rows": [{"task": row.task, "batch_size": row.batch_size, "requests": row.requests,
                    "peer": peer, "rounds": [r and {k: v for k, v in r.items()
                                                    if k != "probabilities"} for r in rounds]}
                   for (row, peer), rounds in results.items()]}


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
  parser.add_argument("--batch_size", type=int, default=32)
  parser.add_argument("--batches", type=int, default=20)
  parser.add_argument("--batch_tasks", default="SST-2",
                      help="Tasks timed in batches of --batch_size; empty for none.")
  parser.add_argument("--peers", default=",".join(PEERS))
  parser.add_argument("--vocab_file", default=common.VOCAB)
  parser.add_argument("--glue_dir", default=os.path.join(common.SHARED_DATA, "glue"))
  parser.add_argument("--frozen_weights", action=argparse.BooleanOptionalAction,
                      default=True)
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--output", default=os.path.join(environments.OUTPUT_DIR,
                                                       "serving_dev.md"))
  parser.add_argument("--worker", action="store_true")
  parser.add_argument("--export_onnx", help="(ort's environment) write the optimized "
                      "ONNX graph of the Hugging Face directory --model here.")
  parser.add_argument("--peer")
  parser.add_argument("--task")
  parser.add_argument("--model")
  args = parser.parse_args()
  if args.worker:
    return worker(args)
  if args.export_onnx:
    return common.report_result({"onnx_ops": export_onnx(args)})
  tasks = set(names(args.tasks)) | set(names(args.batch_tasks))
  if any(common.skipped("serving_dev", os.path.join(args.glue_dir, task, "dev.tsv"),
                        common.GLUE_WHERE) for task in sorted(tasks)):
    return
  peers = installed_peers(names(args.peers))
  with tempfile.TemporaryDirectory() as scratch:
    onnx_ops = prepare_models(args, scratch, peers)
    if "ort" in peers and onnx_ops is None:
      print("ort: skipped (its ONNX export failed)")
      peers.remove("ort")
    results = run_rounds(args, scratch, peers)
  peak = matmul_peak(peers)
  text = report(args, peers, results, onnx_ops, peak)
  print("\n" + text)
  os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
  common.write_text(args.output, text)
  common.write_text(os.path.splitext(args.output)[0] + ".json",
                    json.dumps(results_json(args, peers, results, onnx_ops, peak), indent=1))


if __name__ == "__main__":
  main()
