"""SQuAD prediction as users run it: the real dev files of ../shared/data/squad,
each a whole command (start-up, features and the answers files included),
every peer with the same weights.

  python -m bench.bench_squad_predict [--peers=ours,ours/trimmed,original,hf]
      [--bert_config_file=...] [--original_dir=/path/to/google-research/bert]

A randomly initialised span predictor (--bert_config_file, BERT-Mini by
default) is saved once as a checkpoint in the original's format; then, per
file (SQuAD 2.0 files with --version_2_with_negative), with the original's
settings (sequence 384, stride 128, query 64, batch 8):
  ours         run_squad.py --do_predict --init_checkpoint=<it>: every batch at
               384, its default (the original's answers depend on the logits
               of padding positions; SQuAD windows are long anyway);
  ours/trimmed the same with --pad_to_max_seq_length=false: batches of
               similar length, each at its longest row;
  original     google-research/bert's run_squad.py functions under
               tf.compat.v1 (its examples, features, TFRecords, input_fn,
               create_model and write_predictions) in a session loop, as its
               Estimator predicts on a CPU;
  hf           Hugging Face as its run_qa.py example predicts (BertTokenizerFast
               with overflow and offsets, padded to 384 as the script does by
               default, BertForQuestionAnswering with the same sizes but its
               own random weights, batches of 8 under torch.inference_mode
               rather than its Trainer, then its post-processing).
Each command runs --repeats times, peers taking turns; prints seconds per
command and ratios of the medians (theirs / ours, above 1: ours faster);
checks that ours and the original, given the same weights, answer every
question the same. On SQuAD 2.0 files the original's write_predictions can
stop with an AttributeError when no n-best answer of a question has text
(it did with one draw of random weights here): reported, not timed.
Saves bench/output/squad_predict.json.
"""

import collections
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import types

from bench import common
from bench import environments

PEERS = ("ours", "ours/trimmed", "original", "hf")
SEQ, STRIDE, QUERY, BATCH, N_BEST, MAX_ANSWER = 384, 128, 64, 8, 20, 30


def dev_files(directory):
  return [os.path.join(directory, n) for n in sorted(os.listdir(directory))
          if n.endswith(".json")]


def is_version_2(path):
  with open(path, encoding="utf-8") as f:
    return json.load(f).get("version") == "v2.0" or "v2.0" in os.path.basename(path)


# ---------------------------------------------------------------- workers


def original_namespace(args):
  from bench import bench_model  # pylint: disable=g-import-not-at-top
  tf, modeling, _, code_dir = bench_model.original_modules(args)
  tf.contrib = types.SimpleNamespace(data=types.SimpleNamespace(  # Gone from TF2.
      map_and_batch=tf.data.experimental.map_and_batch))
  import tokenization  # pylint: disable=g-import-not-at-top
  names = {"SquadExample", "InputFeatures", "read_squad_examples",
           "convert_examples_to_features", "_improve_answer_span", "_check_is_max_context",
           "create_model", "input_fn_builder", "write_predictions", "get_final_text",
           "_get_best_indexes", "_compute_softmax", "FeatureWriter"}
  flags = types.SimpleNamespace(version_2_with_negative=args.version_2,
                                null_score_diff_threshold=0.0, verbose_logging=False)
  ns = bench_model.original_functions(args, "run_squad.py", names, {
      "tf": tf, "modeling": modeling, "tokenization": tokenization, "FLAGS": flags,
      "collections": collections, "json": json, "math": __import__("math"),
      "six": types.SimpleNamespace(iteritems=lambda d: d.items()), "os": os})
  return tf, modeling, tokenization, ns, code_dir


def worker_original_init(args):
  """Saves the random-weight span predictor every peer of ours loads."""
  tf, modeling, _, ns, code_dir = original_namespace(args)
  config = modeling.BertConfig.from_json_file(args.bert_config_file)
  ids = tf.zeros([1, SEQ], tf.int32)
  ns["create_model"](config, False, ids, ids, ids, False)
  with tf.Session() as session:
    session.run(tf.global_variables_initializer())
    tf.train.Saver().save(session, args.checkpoint)
  common.cleanup(code_dir)
  return {}


def worker_original(args):
  tf, modeling, tokenization, ns, code_dir = original_namespace(args)
  config = modeling.BertConfig.from_json_file(args.bert_config_file)
  tokenizer = tokenization.FullTokenizer(args.vocab_file, do_lower_case=True)
  os.makedirs(args.output_dir, exist_ok=True)
  examples = ns["read_squad_examples"](args.predict_file, is_training=False)
  writer = ns["FeatureWriter"](os.path.join(args.output_dir, "eval.tf_record"), False)
  features = []

  def append(feature):
    features.append(feature)
    writer.process_feature(feature)
  ns["convert_examples_to_features"](examples, tokenizer, SEQ, STRIDE, QUERY, False, append)
  writer.close()
  batch = tf.data.make_one_shot_iterator(ns["input_fn_builder"](
      writer.filename, SEQ, False, False)({"batch_size": BATCH})).get_next()
  start_logits, end_logits = ns["create_model"](
      config, False, batch["input_ids"], batch["input_mask"], batch["segment_ids"], False)
  raw_result = collections.namedtuple("RawResult", ["unique_id", "start_logits", "end_logits"])
  results = []
  with tf.Session() as session:
    tf.train.Saver().restore(session, args.checkpoint)
    try:
      while True:
        ids, starts, ends = session.run([batch["unique_ids"], start_logits, end_logits])
        results.extend(raw_result(int(i), [float(x) for x in s], [float(x) for x in e])
                       for i, s, e in zip(ids, starts, ends))
    except tf.errors.OutOfRangeError:
      pass
  try:
    ns["write_predictions"](examples, features, results, N_BEST, MAX_ANSWER, True,
                            os.path.join(args.output_dir, "predictions.json"),
                            os.path.join(args.output_dir, "nbest_predictions.json"),
                            os.path.join(args.output_dir, "null_odds.json"))
  except AttributeError as e:  # SQuAD 2.0, a question whose n-best has no answer text
    return {"crashed": "write_predictions: %s" % e}
  finally:
    common.cleanup(code_dir)
  return {"features": len(features)}


def worker_hf(args):
  """As Hugging Face's run_qa.py example predicts (its question-answering
  pipeline is gone from transformers 5): features with the fast tokenizer's
  overflow and offsets, padded to max_length (the script's default), the
  model in batches, then its postprocess_qa_predictions (top n_best starts
  and ends, offsets back into the context, the null answer for SQuAD 2.0)."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  with open(args.bert_config_file, encoding="utf-8") as f:
    sizes = json.load(f)
  torch.manual_seed(0)
  model = transformers.BertForQuestionAnswering(transformers.BertConfig(**sizes)).eval()
  tokenizer = transformers.BertTokenizerFast(args.vocab_file, do_lower_case=True)
  with open(args.predict_file, encoding="utf-8") as f:
    articles = json.load(f)["data"]
  questions = [(q["id"], q["question"].lstrip(), p["context"]) for a in articles
               for p in a["paragraphs"] for q in p["qas"]]
  encoded = tokenizer([q for _, q, _ in questions], [c for _, _, c in questions],
                      truncation="only_second", max_length=SEQ, stride=STRIDE,
                      return_overflowing_tokens=True, return_offsets_mapping=True,
                      padding="max_length")
  owner = encoded.pop("overflow_to_sample_mapping")
  offsets = [[o if s == 1 else None for o, s in zip(offset, encoded.sequence_ids(i))]
             for i, offset in enumerate(encoded.pop("offset_mapping"))]
  starts, ends = [], []
  with torch.inference_mode():
    for b in range(0, len(owner), BATCH):
      batch = {k: torch.tensor(v[b:b + BATCH]) for k, v in encoded.items()}
      outputs = model(**batch)
      starts.append(outputs.start_logits.numpy())
      ends.append(outputs.end_logits.numpy())
  starts, ends = np.concatenate(starts), np.concatenate(ends)
  features_of = collections.defaultdict(list)
  for feature, example in enumerate(owner):
    features_of[example].append(feature)
  predictions = {}
  for example, (qid, _, context) in enumerate(questions):
    null_score, candidates = None, []
    for feature in features_of[example]:
      start, end, offset = starts[feature], ends[feature], offsets[feature]
      if null_score is None or start[0] + end[0] < null_score:
        null_score = start[0] + end[0]
      for i in np.argsort(start)[-1:-N_BEST - 1:-1]:
        for j in np.argsort(end)[-1:-N_BEST - 1:-1]:
          if (i >= len(offset) or j >= len(offset) or offset[i] is None
              or offset[j] is None or j < i or j - i + 1 > MAX_ANSWER):
            continue
          candidates.append((start[i] + end[j], context[offset[i][0]:offset[j][1]]))
    best = max(candidates, default=(-np.inf, ""))
    predictions[qid] = "" if args.version_2 and null_score > best[0] else best[1]
  os.makedirs(args.output_dir, exist_ok=True)
  common.write_text(os.path.join(args.output_dir, "predictions.json"),
                    json.dumps(predictions, indent=2))
  return {"questions": len(questions), "features": len(owner)}


def worker(args):
  work = {"original/init": worker_original_init, "original": worker_original,
          "hf": worker_hf}[args.peer]
  common.report_result(work(args))


# ---------------------------------------------------------------- driver


def run_command(command, label):
  """Seconds `command` took, or None if it failed (or, a worker, reported
  that its peer crashed)."""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  start = time.perf_counter()
  result = subprocess.run(command, cwd=common.REPO_ROOT, capture_output=True, text=True,
                          env=env)
  seconds = time.perf_counter() - start
  reported = [json.loads(l[7:]) for l in result.stdout.splitlines() if l.startswith("RESULT ")]
  if result.returncode or (reported and "crashed" in reported[-1]):
    reason = reported[-1]["crashed"] if reported else result.stderr[-3000:]
    sys.stderr.write("%s failed:\n%s\n" % (label, reason))
    return None
  return seconds


def command_of(args, peer, predict_file, output_dir, checkpoint):
  version_2 = is_version_2(predict_file)
  if peer.startswith("ours"):
    command = [sys.executable, "run_squad.py", "--do_predict",
               "--predict_file=" + predict_file, "--vocab_file=" + args.vocab_file,
               "--bert_config_file=" + args.bert_config_file,
               "--init_checkpoint=" + checkpoint, "--output_dir=" + output_dir,
               "--max_seq_length=%d" % SEQ, "--doc_stride=%d" % STRIDE,
               "--max_query_length=%d" % QUERY, "--predict_batch_size=%d" % BATCH,
               "--version_2_with_negative=%s" % version_2]
    return command + (["--pad_to_max_seq_length=false"] if peer == "ours/trimmed" else [])
  command = [environments.interpreter(peer.split("/")[0]), "-m", "bench.bench_squad_predict",
             "--worker", "--peer=" + peer, "--predict_file=" + predict_file,
             "--output_dir=" + output_dir, "--checkpoint=" + checkpoint,
             "--vocab_file=" + args.vocab_file, "--bert_config_file=" + args.bert_config_file,
             "--original_dir=%s" % args.original_dir]
  return command + (["--version_2"] if version_2 else [])


def same_answers(directory_a, directory_b):
  answers = []
  for directory in (directory_a, directory_b):
    with open(os.path.join(directory, "predictions.json"), encoding="utf-8") as f:
      answers.append(json.load(f))
  return sum(answers[0][k] == answers[1].get(k) for k in answers[0]), len(answers[0])


def main():
  parser = common.real_data_parser(__doc__.split("\n")[0], "squad_predict.json")
  parser.add_argument("--peers", default=",".join(PEERS))
  parser.add_argument("--repeats", type=int, default=3)
  parser.add_argument("--worker", action="store_true")
  parser.add_argument("--peer")
  parser.add_argument("--predict_file")
  parser.add_argument("--output_dir")
  parser.add_argument("--checkpoint")
  parser.add_argument("--version_2", action="store_true")
  args = parser.parse_args()
  if args.worker:
    return worker(args)
  if not args.original_dir:
    print("squad_predict: skipped: no --original_dir (or BERT_ORIGINAL_DIR), a checkout of "
          "google-research/bert: its code writes the weights both sides load")
    return
  if (common.skipped("squad_predict", args.squad_dir, common.SQUAD_WHERE) or
      common.skipped("squad_predict", args.bert_config_file, common.CONFIG_WHERE)):
    return
  files = dev_files(args.squad_dir)
  peers = args.peers.split(",")
  results = {}
  with tempfile.TemporaryDirectory() as scratch:
    checkpoint = os.path.join(scratch, "init", "bert_model.ckpt")
    if run_command(command_of(args, "original/init", files[0], scratch, checkpoint),
                   "original/init") is None:
      sys.exit(1)
    for repeat in range(args.repeats):  # Peers take turns: slow spells hit them alike.
      for predict_file in files:
        name = os.path.basename(predict_file)
        for peer in peers:
          output_dir = os.path.join(scratch, name, peer.replace("/", "_"))
          shutil.rmtree(output_dir, ignore_errors=True)
          seconds = run_command(command_of(args, peer, predict_file, output_dir, checkpoint),
                                "%s %s" % (peer, name))
          if seconds is None:
            continue
          r = results.setdefault(name, {}).setdefault(peer, {"runs": []})
          r["runs"].append(seconds)
          r["seconds"] = statistics.median(r["runs"])
          line = "%-62s %-12s %6.1f s" % (name, peer, seconds)
          if peer == "original" and "ours" in results[name] and repeat == 0:
            same, total = same_answers(output_dir, os.path.join(scratch, name, "ours"))
            r["same_answers_as_ours"] = [same, total]
            line += "  answers equal to ours: %d of %d" % (same, total)
          print(line, flush=True)
  print("\nSQuAD prediction, whole commands, %s, median of %d (ratio: theirs / ours, "
        "above 1 ours faster)" % (os.path.basename(args.bert_config_file), args.repeats))
  for name, by_peer in results.items():
    for peer, r in by_peer.items():
      if peer != "ours" and "ours" in by_peer:
        print("  %-62s vs %-12s %.2fx" % (name, peer, r["seconds"] / by_peer["ours"]["seconds"]))
  common.write_text(args.output, json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
  main()
