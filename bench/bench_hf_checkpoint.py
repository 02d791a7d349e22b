"""A real Hugging Face checkpoint in and out, checked against transformers
itself on real text.

  python -m bench.bench_hf_checkpoint [--texts=300] [--glue_dir=../shared/data/glue]

1. In: all-MiniLM-L6-v2 (bench/pretrained.py) imported by
   bert-convert-checkpoint; its encoder run by ours and by transformers'
   BertModel on the first --texts sentence pairs of GLUE's MRPC dev set:
   the token ids each side's tokenizer gives, and the largest difference of
   the last layer (real tokens) and the pooled output.
2. Out: ours fine-tunes it briefly on MRPC (run_classifier.py, the first
   --train_rows rows, one epoch), bert-convert-checkpoint writes the result
   as a Hugging Face directory, transformers loads it
   (BertForSequenceClassification: missing and unexpected weights listed)
   and its logits on the same pairs are compared with ours
   (run_classifier.py --do_predict's test_results.tsv, as probabilities, and
   the model's logits).
Prints the figures and writes bench/output/hf_checkpoint.json. Not a timed
benchmark: what a user bringing a checkpoint needs to be true.
"""

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile

from bench import common
from bench import environments
from bench import pretrained

SEQ = 128


def mrpc_pairs(path, count):
  with open(path, encoding="utf-8-sig") as f:
    rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
  return [(r[3], r[4]) for r in rows[:count]]


def worker_ours(args):
  """Our tokenizer and model on the pairs: ids and outputs in an .npz."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import modeling  # pylint: disable=g-import-not-at-top
  from data_prep import tokenization  # pylint: disable=g-import-not-at-top
  from tasks.classification import features  # pylint: disable=g-import-not-at-top
  pairs = mrpc_pairs(args.pairs_file, args.texts)
  tokenizer = tokenization.FullTokenizer(os.path.join(args.checkpoint_dir, "vocab.txt"), True)
  examples = [features.InputExample("dev-%d" % i, a, b, "0") for i, (a, b) in enumerate(pairs)]
  converted = [features.convert_single_example(i, e, ["0", "1"], SEQ, tokenizer)
               for i, e in enumerate(examples)]
  inputs = {name: np.array([getattr(f, name) for f in converted], np.int32)
            for name in ("input_ids", "input_mask", "segment_ids")}
  config = modeling.BertConfig.from_json_file(os.path.join(args.checkpoint_dir,
                                                           "bert_config.json"))
  model = modeling.BertModel(config)
  modeling.load_checkpoint(model, os.path.join(args.checkpoint_dir, "bert_model.ckpt"),
                           log=False)
  outputs = model(inputs, training=False)
  result = dict(inputs, sequence_output=outputs["sequence_output"].numpy(),
                pooled_output=outputs["pooled_output"].numpy())
  if args.classifier_dir:  # The fine-tuned classifier's logits too.
    classifier = modeling.BertClassifier(config, num_labels=2)
    modeling.load_checkpoint(classifier, args.classifier_dir, log=False)
    result["logits"] = classifier(inputs, training=False)["logits"].numpy()
  np.savez(args.output, **result)
  common.report_result({})


def worker_hf(args):
  """transformers on the same pairs: its tokenizer's ids, BertModel's
  outputs on our ids, and the exported classifier's logits and load report."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  ours = np.load(args.ours_output)
  pairs = mrpc_pairs(args.pairs_file, args.texts)
  tokenizer = transformers.AutoTokenizer.from_pretrained(args.model_dir)
  encoded = tokenizer([a for a, _ in pairs], [b for _, b in pairs], truncation=True,
                      max_length=SEQ, padding="max_length", return_tensors="np")
  inputs = {"input_ids": torch.tensor(ours["input_ids"], dtype=torch.long),
            "attention_mask": torch.tensor(ours["input_mask"], dtype=torch.long),
            "token_type_ids": torch.tensor(ours["segment_ids"], dtype=torch.long)}
  result = {"same_ids": int((encoded["input_ids"] == ours["input_ids"]).all(1).sum()),
            "texts": len(pairs)}
  with torch.inference_mode():
    model = transformers.BertModel.from_pretrained(args.model_dir).eval()
    out = model(**inputs)
    real = ours["input_mask"][..., None] > 0
    result["sequence_max_diff"] = float(
        (np.abs(out.last_hidden_state.numpy() - ours["sequence_output"]) * real).max())
    result["pooled_max_diff"] = float(np.abs(out.pooler_output.numpy() -
                                             ours["pooled_output"]).max())
    if args.exported_dir:
      classifier, info = transformers.BertForSequenceClassification.from_pretrained(
          args.exported_dir, output_loading_info=True)
      result["load_report"] = {k: sorted(v) for k, v in info.items() if v}
      logits = classifier.eval()(**inputs).logits.numpy()
      result["logits_max_diff"] = float(np.abs(logits - ours["logits"]).max())
  common.report_result(result)


def run(cmd, label):
  result = subprocess.run(cmd, cwd=common.REPO_ROOT, capture_output=True, text=True,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  if result.returncode:
    raise SystemExit("%s failed:\n%s" % (label, result.stderr[-3000:]))
  reported = [l for l in result.stdout.splitlines() if l.startswith("RESULT ")]
  return json.loads(reported[-1][len("RESULT "):]) if reported else {}


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--texts", type=int, default=300)
  parser.add_argument("--train_rows", type=int, default=320)
  parser.add_argument("--glue_dir", default=os.path.join(common.SHARED_DATA, "glue"))
  parser.add_argument("--output", default=os.path.join(common.REPO_ROOT, "bench", "output",
                                                       "hf_checkpoint.json"))
  parser.add_argument("--worker", choices=["ours", "hf"])
  for name in ("pairs_file", "checkpoint_dir", "classifier_dir", "model_dir", "ours_output",
               "exported_dir"):
    parser.add_argument("--" + name)
  args = parser.parse_args()
  if args.worker:
    return (worker_ours if args.worker == "ours" else worker_hf)(args)
  model_dir = pretrained.hf_directory()
  mrpc = os.path.join(args.glue_dir, "MRPC")
  if model_dir is None or not os.path.exists(os.path.join(mrpc, "dev.tsv")):
    print("hf_checkpoint: skipped: " + (pretrained.WHERE if model_dir is None else
                                        "no %s/dev.tsv (GLUE's download script)" % mrpc))
    return
  scratch = tempfile.mkdtemp(prefix="hf_checkpoint_")
  try:
    checkpoint_dir = pretrained.imported(os.path.join(scratch, "imported"))
    data_dir = os.path.join(scratch, "MRPC")
    os.makedirs(data_dir)
    with open(os.path.join(mrpc, "train.tsv"), encoding="utf-8") as f:
      lines = f.readlines()[:1 + args.train_rows]
    with open(os.path.join(data_dir, "train.tsv"), "w", encoding="utf-8") as f:
      f.writelines(lines)
    shutil.copy(os.path.join(mrpc, "dev.tsv"), data_dir)
    classifier_dir = os.path.join(scratch, "fine_tuned")
    run([sys.executable, "run_classifier.py", "--task_name=MRPC", "--do_train",
         "--data_dir=" + data_dir, "--vocab_file=" + os.path.join(checkpoint_dir, "vocab.txt"),
         "--bert_config_file=" + os.path.join(checkpoint_dir, "bert_config.json"),
         "--init_checkpoint=" + os.path.join(checkpoint_dir, "bert_model.ckpt"),
         "--num_train_epochs=1", "--learning_rate=5e-5", "--output_dir=" + classifier_dir],
        "fine-tuning")
    exported_dir = os.path.join(scratch, "exported")
    run([sys.executable, "-m", "modeling.checkpoints.convert",
         "--bert_config_file=" + os.path.join(checkpoint_dir, "bert_config.json"),
         "--input_checkpoint=" + classifier_dir, "--output_checkpoint=" + exported_dir,
         "--output_format=huggingface", "--label_names=0,1"], "export")
    common_flags = ["--pairs_file=" + os.path.join(mrpc, "dev.tsv"), "--texts=%d" % args.texts]
    ours_output = os.path.join(scratch, "ours.npz")
    run([sys.executable, "-m", "bench.bench_hf_checkpoint", "--worker=ours",
         "--checkpoint_dir=" + checkpoint_dir, "--classifier_dir=" + classifier_dir,
         "--output=" + ours_output] + common_flags, "ours")
    result = run([environments.python_of("hf"), "-m", "bench.bench_hf_checkpoint", "--worker=hf",
                  "--model_dir=" + model_dir, "--ours_output=" + ours_output,
                  "--exported_dir=" + exported_dir] + common_flags, "hf")
  finally:
    shutil.rmtree(scratch, ignore_errors=True)
  print("In:  %d of %d MRPC dev pairs tokenized to the same ids by both sides; largest "
        "difference from transformers' BertModel: last layer %.2g, pooled output %.2g" % (
            result["same_ids"], result["texts"], result["sequence_max_diff"],
            result["pooled_max_diff"]))
  print("Out: transformers loads the exported classifier with %s; largest logit "
        "difference from ours %.2g" % (
            "no missing or unexpected weights" if not result["load_report"] else
            result["load_report"], result["logits_max_diff"]))
  common.write_text(args.output, json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
  main()
