"""The original's reading of rows in the layouts of two GLUE tasks it has no
processor of its own for, MNLI's mismatched sets and QQP, for
tests/test_classifier_data.py to compare ours with.

  bench/output/envs/original/bin/python tests/reference_makers/make_glue_layouts_reference.py \\
    --original_dir=../bert_original \\
    --output=tests/data/classifier_reference/glue_layouts/examples.json

MNLI mismatched: the original's MnliProcessor reads matched files only; the
mismatched files have the same columns, so it is given them under the
matched names. QQP: the original's DataProcessor._read_tsv, then the columns
GLUE's QQP files hold (train/dev: id, qid1, qid2, question1, question2,
is_duplicate; test: id, question1, question2), the header skipped, guids and
the test label made as the original's processors make them.
"""

import argparse
import collections
import csv
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import original  # pylint: disable=g-import-not-at-top,wrong-import-position

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data",
                    "classifier_reference", "glue_layouts")


def mnli_mismatched(ns):
  staged = tempfile.mkdtemp(prefix="mnli_mm_")
  try:
    for split in ("dev", "test"):
      shutil.copy(os.path.join(DATA, "MNLI", "%s_mismatched.tsv" % split),
                  os.path.join(staged, "%s_matched.tsv" % split))
    processor = ns["MnliProcessor"]()
    return {split: getattr(processor, "get_%s_examples" % split)(staged)
            for split in ("dev", "test")}
  finally:
    shutil.rmtree(staged, ignore_errors=True)


def qqp(ns):
  read = ns["DataProcessor"]._read_tsv  # pylint: disable=protected-access
  convert = ns["tokenization"].convert_to_unicode
  example = ns["InputExample"]
  sets = {}
  for split, (a, b) in (("dev", (3, 4)), ("test", (1, 2))):
    rows = read(os.path.join(DATA, "QQP", split + ".tsv"))
    sets[split] = [
        example(guid="%s-%d" % (split, i), text_a=convert(line[a]), text_b=convert(line[b]),
                label="0" if split == "test" else convert(line[5]))
        for i, line in enumerate(rows) if i]
  return sets


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--original_dir", required=True, help="a checkout of google-research/bert")
  parser.add_argument("--output", required=True)
  args = parser.parse_args()
  _, tokenization, _, _, code = original.load(args.original_dir)
  try:
    ns = {"tokenization": tokenization, "collections": collections, "csv": csv, "os": os,
          "tf": sys.modules["tensorflow.compat.v1"]}
    original.functions(args.original_dir, "run_classifier.py",
                       ["InputExample", "DataProcessor", "MnliProcessor"], ns)
    out = collections.OrderedDict()
    for task, sets in (("MNLI-mm", mnli_mismatched(ns)), ("QQP", qqp(ns))):
      for split, examples in sets.items():
        out["%s/%s" % (task, split)] = [[e.guid, e.text_a, e.text_b, e.label] for e in examples]
  finally:
    original.cleanup(code)
  with open(args.output, "w", encoding="utf-8") as f:
    json.dump(out, f, indent=1, ensure_ascii=False)
    f.write("\n")
  print("Written %s" % args.output)


if __name__ == "__main__":
  main()
