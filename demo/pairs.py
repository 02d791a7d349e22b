"""The demo's sentence-pair task, made from the bundled corpus, in MRPC's format.

"Is B a shortened copy of A?", a paraphrase-style task like MRPC's: label 1
when B is verse A with about a third of its words left out, 0 when B is
another verse of the same chapter shortened the same way (same names and
topic, so matching words is not enough). Half the pairs are each, so
always answering one label scores 50%. Chapters, not pairs, are split
between train, dev and test, so no verse is seen in training and evaluated
on. Written as `train.tsv`, `dev.tsv` and `test.tsv` with MRPC's columns, so
`run_classifier.py --task_name=MRPC` reads them unchanged.

With `--corpus_file` (a pre-training corpus: one sentence a line, a blank
line between documents), the pairs come from that text instead: documents
take the chapters' place and sentences the verses'.
"""

import argparse
import os
import random
import sys

from demo import corpus as demo_corpus
from plumbing import files
from plumbing.errors import UserError

_HEADER = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
_TEST_HEADER = "index\t#1 ID\t#2 ID\t#1 String\t#2 String\n"


def _clean(text):
  return " ".join(text.replace("\t", " ").split())


def _shortened(verse, rng):
  """The verse with about a third of its words left out, order kept."""
  words = verse.split()
  kept = [w for w in words if rng.random() >= 0.35]
  return " ".join(kept if len(kept) >= 2 else words[:2])


def make_pairs(chapters, count, rng):
  """`count` labelled pairs (label, id_a, id_b, text_a, text_b) from
  [(citation, verses)]: half a verse and a shortened copy of it (1), half a
  verse and a shortened copy of another verse of the same chapter (0)."""
  pairs = []
  while len(pairs) < count:
    citation, verses = rng.choice(chapters)
    if len(verses) < 2:
      continue
    i, j = rng.sample(range(len(verses)), 2)
    if len(pairs) % 2 == 0:
      j = i
    pairs.append((int(i == j), "%s:%d" % (citation, i + 1), "%s:%d" % (citation, j + 1),
                  verses[i], _shortened(verses[j], rng)))
  rng.shuffle(pairs)
  return pairs


def read_documents(path):
  """[(name, sentences)] of a corpus file's documents (blank-line separated),
  named by the file and the line each starts on."""
  documents, sentences, start = [], [], 1
  with open(path, encoding="utf-8") as f:
    for number, line in enumerate(f, 1):
      line = line.strip()
      if line:
        sentences.append(line)
      elif sentences:
        documents.append(("%s:%d" % (os.path.basename(path), start), sentences))
        sentences = []
      if not line:
        start = number + 1
  if sentences:
    documents.append(("%s:%d" % (os.path.basename(path), start), sentences))
  return documents


def write_task(output_dir, train=4000, dev=500, test=200, seed=7, corpus_file=None):
  """Writes the three files (each atomically); returns their row counts.
  The pairs come from the bundled corpus's verses, or from `corpus_file`."""
  chapters = (read_documents(corpus_file) if corpus_file else
              list(demo_corpus.iter_kjv_chapters()))
  rng = random.Random(seed)
  splits = {"train": [], "dev": [], "test": []}
  for chapter in chapters:
    roll = rng.random()
    splits["dev" if roll < 0.1 else "test" if roll < 0.15 else "train"].append(chapter)
  for name, part in splits.items():
    if not any(len(sentences) >= 2 for _, sentences in part):
      raise UserError(
          "%s: too few documents to make the %s pairs from: %d of them have two or more "
          "sentences, and about a tenth of the documents go to dev and a twentieth to "
          "test. Give a corpus of a few hundred documents (a blank line between "
          "documents, one sentence a line)." % (
              corpus_file, name, sum(len(s) >= 2 for _, s in chapters)))
  os.makedirs(output_dir, exist_ok=True)
  counts = {}
  for name, count in (("train", train), ("dev", dev), ("test", test)):
    pairs = make_pairs(splits[name], count, rng)
    path = os.path.join(output_dir, name + ".tsv")
    with files.atomic_output(path) as f:
      f.write(_TEST_HEADER if name == "test" else _HEADER)
      for index, (label, id_a, id_b, text_a, text_b) in enumerate(pairs):
        first = str(index) if name == "test" else str(label)
        f.write("\t".join([first, id_a, id_b, _clean(text_a), _clean(text_b)]) + "\n")
    counts[name] = len(pairs)
  return counts


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--output_dir", required=True)
  parser.add_argument("--num_train", type=int, default=4000)
  parser.add_argument("--seed", type=int, default=7)
  parser.add_argument("--corpus_file", default=None,
                      help="Make the pairs from this corpus (the bundled one if unset).")
  args = parser.parse_args(argv)
  try:
    counts = write_task(args.output_dir, train=args.num_train, seed=args.seed,
                        corpus_file=args.corpus_file)
  except (UserError, OSError) as error:
    sys.exit("pairs.py: error: %s" % error)
  print("Wrote the demo sentence-pair task to %s: %s" % (
      args.output_dir, ", ".join("%s %d" % kv for kv in counts.items())))


if __name__ == "__main__":
  main()
