"""SQuAD feature creation: ours vs the original's run_squad.py, same file.

  python bench/bench_squad_features.py --original_dir=/path/to/bert [--megabytes=10]

Builds a SQuAD-format file of about --megabytes from the real SQuAD articles
in ../shared/data/squad (the SQuAD articles only; one answer per question, answerable questions only,
repeated with fresh ids until the size is reached), then times, each in its
own process, what run_squad.py does before the model runs: read the file,
make the windowed features (max_seq_length 384, doc_stride 128,
max_query_length 64) and write them to a TFRecord, for training
(is_training=True: answer positions, train.tf_record) and for prediction
(eval.tf_record, and the features kept in memory). Both sides hash every
feature field (tokens, maps, ids, mask, segments, positions), so the run
also checks that the features are identical.
"""

import ast
import copy
import glob
import hashlib
import json
import os
import sys
import time
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # pylint: disable=g-import-not-at-top

LENGTHS = dict(max_seq_length=384, doc_stride=128, max_query_length=64)


def build_squad_file(path, megabytes):
  """Real SQuAD paragraphs, each question with its first answer only."""
  articles = []
  for source in sorted(glob.glob(os.path.join(common.SHARED_DATA, "squad", "*.json"))):
    with open(source, encoding="utf-8") as f:
      for article in json.load(f)["data"]:
        if article.get("title") == "Technical_components":
          continue  # Not SQuAD (see MANIFEST.md): misaligned answers.
        for paragraph in article["paragraphs"]:
          paragraph["qas"] = [
              {"id": qa["id"], "question": qa["question"], "answers": qa["answers"][:1]}
              for qa in paragraph["qas"] if qa["answers"] and not qa.get("is_impossible")]
        articles.append(article)
  data = []
  size = 0
  copy_index = 0
  while size < megabytes * 1e6:
    for article in articles:
      article = copy.deepcopy(article)
      for paragraph in article["paragraphs"]:
        for qa in paragraph["qas"]:
          qa["id"] = "%s_%d" % (qa["id"], copy_index)
      data.append(article)
      size += len(json.dumps(article))
      if size >= megabytes * 1e6:
        break
    copy_index += 1
  with open(path, "w", encoding="utf-8") as f:
    json.dump({"version": "1.1", "data": data}, f)
  return path


def feature_digest(features):
  """sha256 over every field of every feature, in order."""
  digest = hashlib.sha256()
  for f in features:
    row = [f.unique_id, f.example_index, f.doc_span_index, f.tokens,
           sorted(f.token_to_orig_map.items()), sorted(f.token_is_max_context.items()),
           f.input_ids, f.input_mask, f.segment_ids, f.start_position, f.end_position,
           bool(f.is_impossible)]
    digest.update(json.dumps(row).encode("utf-8"))
  return digest.hexdigest()


def _original_run_squad(code_dir, checkout):
  """The original's run_squad.py reading, feature and writer code, executed
  without its flag definitions (FLAGS is a stand-in with the two it reads)."""
  import tensorflow.compat.v1 as tf  # pylint: disable=g-import-not-at-top
  import six  # pylint: disable=g-import-not-at-top
  sys.path.insert(0, code_dir)
  import tokenization  # pylint: disable=g-import-not-at-top
  source = os.path.join(checkout, "run_squad.py")
  with open(source, encoding="utf-8") as f:
    tree = ast.parse(f.read())
  body = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
  import collections  # pylint: disable=g-import-not-at-top
  import math  # pylint: disable=g-import-not-at-top
  namespace = {"tf": tf, "tokenization": tokenization, "six": six, "json": json,
               "collections": collections, "math": math, "os": os,
               "FLAGS": types.SimpleNamespace(version_2_with_negative=False,
                                              verbose_logging=False)}
  exec(compile(ast.Module(body, []), source, "exec"), namespace)  # pylint: disable=exec-used
  return types.SimpleNamespace(tokenizer=tokenization.FullTokenizer, **namespace)


def run_worker(args):
  is_training = args.mode == "train"
  record = os.path.join(args.work_dir, "%s_%s.tf_record" % (args.peer, args.mode))
  features = []
  if args.peer == "original":
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    code_dir = common.original_code_dir(args.original_dir)
    rs = _original_run_squad(code_dir, args.original_dir)
    rs.tf.logging.set_verbosity(rs.tf.logging.ERROR)
    start = time.perf_counter()
    tokenizer = rs.tokenizer(vocab_file=args.vocab_file, do_lower_case=True)
    examples = rs.read_squad_examples(input_file=args.input_file, is_training=is_training)
    writer = rs.FeatureWriter(filename=record, is_training=is_training)

    def output(feature):
      features.append(feature)
      writer.process_feature(feature)
    rs.convert_examples_to_features(examples=examples, tokenizer=tokenizer,
                                    is_training=is_training, output_fn=output, **LENGTHS)
    writer.close()
    seconds = time.perf_counter() - start
    common.cleanup(code_dir)
  else:
    from tasks.squad import examples as squad_examples  # pylint: disable=g-import-not-at-top
    from tasks.squad import features as squad_features  # pylint: disable=g-import-not-at-top
    from data_prep import tokenization  # pylint: disable=g-import-not-at-top
    start = time.perf_counter()
    tokenizer = tokenization.FullTokenizer(args.vocab_file, do_lower_case=True)
    examples = squad_examples.read_squad_examples(args.input_file, is_training=is_training)
    with squad_features.FeatureWriter(record, is_training=is_training) as writer:
      def output(feature):
        features.append(feature)
        writer.process_feature(feature)
      squad_features.convert_examples_to_features(examples, tokenizer, is_training=is_training,
                                                  output_fn=output, **LENGTHS)
    seconds = time.perf_counter() - start
  os.remove(record)
  common.report_result({"seconds": seconds, "features": len(features),
                        "examples": len(examples), "digest": feature_digest(features)})


def measure(args, peer, mode, input_file, work_dir):
  cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--peer=" + peer,
         "--mode=" + mode, "--input_file=" + input_file, "--work_dir=" + work_dir,
         "--vocab_file=" + args.vocab_file]
  return common.run_worker(cmd, "%s/%s" % (peer, mode), args.original_dir)


def main():
  parser = common.argument_parser(megabytes=10)
  parser.add_argument("--worker", action="store_true")
  parser.add_argument("--peer", default="ours")
  parser.add_argument("--mode", default="train")
  parser.add_argument("--input_file")
  parser.add_argument("--work_dir")
  args = parser.parse_args()
  if args.worker:
    return run_worker(args)
  import tempfile  # pylint: disable=g-import-not-at-top
  work_dir = tempfile.mkdtemp(prefix="bench_squad_")
  input_file = build_squad_file(os.path.join(work_dir, "squad.json"), args.megabytes)
  print("SQuAD-format file: %.1f MB" % (os.path.getsize(input_file) / 1e6))
  peers = ["original", "ours"] if args.original_dir else ["ours"]
  for mode in ("train", "predict"):
    results = {peer: measure(args, peer, mode, input_file, work_dir) for peer in peers}
    print("\n%s features (read + windows + TFRecord), %s" % (
        mode, ", ".join("%s=%s" % kv for kv in LENGTHS.items())))
    for peer, r in results.items():
      if r is None:
        print("  %-9s failed" % peer)
        continue
      ratio = ""
      if results.get("original") and peer != "original":
        ratio = "  %.1fx original" % (results["original"]["seconds"] / r["seconds"])
      print("  %-9s %7.1f s  %d examples, %d features%s" % (
          peer, r["seconds"], r["examples"], r["features"], ratio))
    digests = {r["digest"] for r in results.values() if r}
    if len(results) > 1 and all(results.values()):
      print("  features identical: %s" % ("yes" if len(digests) == 1 else "NO"))
  common.cleanup(work_dir)


if __name__ == "__main__":
  main()
