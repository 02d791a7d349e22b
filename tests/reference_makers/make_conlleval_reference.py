"""Scores the cases of tests/ner_cases.py (and CoNLL-2003's dev set against
seeded wrong predictions) with the CoNLL shared task's own scorer, for
tests/test_ner_data.py to compare ours with.

  python tests/reference_makers/make_conlleval_reference.py \\
    --conlleval=../shared/tools/conlleval.pl --output=tests/data/ner_reference/conlleval.json

The scorer is run, not copied: it is not part of this repository.
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import ner_cases  # pylint: disable=g-import-not-at-top,wrong-import-position

SHARED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared",
                      "data")


def scored(conlleval, sentences):
  text = "".join("".join("%s %s %s\n" % triple for triple in s) + "\n" for s in sentences)
  result = subprocess.run(["perl", conlleval], input=text, capture_output=True, text=True,
                          check=True)
  return result.stdout


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--conlleval", required=True)
  parser.add_argument("--output", required=True)
  args = parser.parse_args()
  out = {}
  for name, sentences in ner_cases.CASES.items():
    if name == "bioes":
      sentences = [[(w, ner_cases.bioes_as_iob2(g), ner_cases.bioes_as_iob2(p))
                    for w, g, p in s] for s in sentences]
    out[name] = scored(args.conlleval, sentences)
  dev = os.path.join(SHARED, "conll2003", "dev.txt")
  with open(dev, "rb") as f:
    digest = hashlib.sha256(f.read()).hexdigest()
  out["conll2003_dev"] = {"sha256": digest, "report": scored(args.conlleval,
                                                             ner_cases.conll_dev_case(dev))}
  with open(args.output, "w", encoding="utf-8") as f:
    json.dump(out, f, indent=1, sort_keys=True)
    f.write("\n")


if __name__ == "__main__":
  main()
