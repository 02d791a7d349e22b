"""Entities of raw text as people write it, against the same tagger reading
CoNLL's own words (issue 61): how much the split of raw text into words
costs.

  python -m bench.bench_ner_raw_text [--sentences=400] [--epochs=3]
    [--learning_rate=1e-4] [--conll_dir=../shared/data/conll2003]

1. A tagger: all-MiniLM-L6-v2 (bench/pretrained.py) fine-tuned by
   run_ner.py on CoNLL-2003's train file (kept in bench/output/ner_raw_text,
   so a second run reuses it).
2. The first --sentences dev sentences, written as raw text by an
   independent detokenizer (sacremoses' MosesDetokenizer, English).
3. Entities as (type, text) per sentence, F1 against the gold entities
   (their words' span of the raw text): the tagger reading the gold words
   (run_ner.py --do_predict); reading the raw text cut by the basic split
   (the original BasicTokenizer's: every punctuation mark a word) and by the
   Treebank split (run_ner.py --predict_file --raw_text_words=...). With
   each, how many entities begin or end with punctuation: any (`U.S.` does),
   and a CoNLL word of punctuation alone (`. Dale`, `(USA`); and how many
   are punctuation alone.
Prints a table and writes docs/benchmarks/ner_raw_text.{md,json} (--page),
with the machine, date and command. Not timed.
"""

import argparse
import collections
import datetime
import json
import os
import subprocess
import sys

from bench import common
from bench import pretrained
from data_prep import tokenization
from tasks.ner import conll

SEQ = 128


def detokenized(sentences):
  """Each sentence's raw text and its words' (start, end) in it."""
  from sacremoses import MosesDetokenizer  # pylint: disable=g-import-not-at-top  (bench only)
  detokenizer = MosesDetokenizer(lang="en")
  out = []
  for sentence in sentences:
    text, spans, position = detokenizer.detokenize(sentence.words), [], 0
    for word in sentence.words:
      start = text.index(word, position)
      spans.append((start, start + len(word)))
      position = start + len(word)
    out.append((text, spans))
  return out


def entity_words(tags):
  """[(type, first word, last word)] of IOB tags, as the CoNLL scorer reads them."""
  found, previous = [], None
  for index, tag in enumerate(tags):
    if conll.starts_entity(previous, tag):
      found.append([conll.split_tag(tag)[1], index, index])
    elif tag != "O":
      found[-1][2] = index
    previous = tag
  return [tuple(e) for e in found]


def f1(gold, predicted):
  """(precision, recall, F1) in percent over per-sentence multisets."""
  matched = sum(sum((collections.Counter(g) & collections.Counter(p)).values())
                for g, p in zip(gold, predicted))
  found, right = sum(map(len, predicted)), sum(map(len, gold))
  precision = 100.0 * matched / found if found else 0.0
  recall = 100.0 * matched / right if right else 0.0
  return precision, recall, (2 * precision * recall / (precision + recall)
                             if precision + recall else 0.0)


def punctuation_counts(entities, texts):
  """(entities beginning or ending with punctuation, those whose first or
  last character lies in a gold word of punctuation alone, entities of
  punctuation alone) among [(type, text, start, end)] per sentence."""
  # pylint: disable=protected-access  (the original's predicate)
  punctuation = tokenization.is_punctuation
  edges = stray = alone = 0
  for sentence, (text, spans) in zip(entities, texts):
    lone = {i for s, e in spans if all(punctuation(c) for c in text[s:e]) for i in range(s, e)}
    for _, words, start, end in sentence:
      edges += bool(words) and (punctuation(words[0]) or punctuation(words[-1]))
      stray += start in lone or end - 1 in lone
      alone += all(punctuation(c) or c.isspace() for c in words)
  return edges, stray, alone


def run(cmd, label):
  result = subprocess.run(cmd, cwd=common.REPO_ROOT, capture_output=True, text=True,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  if result.returncode:
    raise SystemExit("%s failed:\n%s" % (label, result.stderr[-3000:]))
  return result


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--sentences", type=int, default=400)
  parser.add_argument("--epochs", type=float, default=3.0)
  parser.add_argument("--learning_rate", type=float, default=1e-4)
  parser.add_argument("--conll_dir", default=os.path.join(common.SHARED_DATA, "conll2003"))
  parser.add_argument("--output_dir", default=os.path.join(common.REPO_ROOT, "bench", "output"),
                      help="The tagger and its data (kept: a rerun evaluates it again).")
  parser.add_argument("--page", default=os.path.join(common.REPO_ROOT, "docs", "benchmarks",
                                                     "ner_raw_text"),
                      help="Where the results go, without .md / .json.")
  args = parser.parse_args()
  if pretrained.hf_directory() is None:
    print("ner_raw_text: skipped: " + pretrained.WHERE)
    return
  if not os.path.exists(os.path.join(args.conll_dir, "train.txt")):
    print("ner_raw_text: skipped: no %s/train.txt (the CoNLL-2003 English files)"
          % args.conll_dir)
    return
  work = os.path.join(args.output_dir, "ner_raw_text")
  checkpoint_dir = pretrained.imported(os.path.join(work, "imported"))
  dev = conll.read_sentences(os.path.join(args.conll_dir, "dev.txt"))[:args.sentences]
  data_dir = os.path.join(work, "data")
  os.makedirs(data_dir, exist_ok=True)
  with open(os.path.join(args.conll_dir, "train.txt"), encoding="utf-8") as f:
    train = f.read()
  written = {"train.txt": train, "test.txt": "".join(
      "".join("%s %s\n" % (w, t) for w, t in zip(s.words, s.tags)) + "\n" for s in dev)}
  texts = detokenized(dev)
  written["raw.txt"] = "".join(text + "\n" for text, _ in texts)
  for name, content in written.items():
    with open(os.path.join(data_dir, name), "w", encoding="utf-8") as f:
      f.write(content)
  tagger_dir = os.path.join(work, "tagger_%gep_lr%g" % (args.epochs, args.learning_rate))
  model_flags = ["--vocab_file=" + os.path.join(checkpoint_dir, "vocab.txt"),
                 "--bert_config_file=" + os.path.join(checkpoint_dir, "bert_config.json"),
                 "--max_seq_length=%d" % SEQ, "--output_dir=" + tagger_dir]
  print("Fine-tuning (or reusing) %s ..." % tagger_dir, flush=True)
  run([sys.executable, "run_ner.py", "--do_train", "--do_predict", "--data_dir=" + data_dir,
       "--init_checkpoint=" + os.path.join(checkpoint_dir, "bert_model.ckpt"),
       "--num_train_epochs=%g" % args.epochs, "--learning_rate=%g" % args.learning_rate,
       "--train_batch_size=32"] + model_flags, "NER fine-tuning")

  def as_entities(text, spans, found):
    return [(kind, text[spans[first][0]:spans[last][1]], spans[first][0], spans[last][1])
            for kind, first, last in found]

  gold = [as_entities(text, spans, entity_words(conll.to_iob2(s.tags)))
          for s, (text, spans) in zip(dev, texts)]
  with open(os.path.join(tagger_dir, "predictions.txt"), encoding="utf-8") as f:
    rows = [[line.split() for line in block.splitlines()]
            for block in f.read().split("\n\n") if block.strip()]
  readings = {"gold words": [as_entities(text, spans, entity_words(conll.to_iob2(
      [r[2] for r in sentence_rows]))) for sentence_rows, (text, spans) in zip(rows, texts)]}
  for split in ("basic", "treebank"):
    run([sys.executable, "run_ner.py", "--predict_file=" + os.path.join(data_dir, "raw.txt"),
         "--raw_text_words=" + split] + model_flags, "entities of raw text (%s)" % split)
    with open(os.path.join(tagger_dir, "entities.jsonl"), encoding="utf-8") as f:
      lines = [json.loads(line) for line in f]
    readings["raw text, %s split" % split] = [
        [(e["type"], e["text"], e["start"], e["end"]) for e in line["entities"]]
        for line in lines]

  def pairs(entities):
    return [[(kind, text) for kind, text, _, _ in sentence] for sentence in entities]

  rows_out = []
  for name, predicted in readings.items():
    precision, recall, score = f1(pairs(gold), pairs(predicted))
    edges, stray, alone = punctuation_counts(predicted, texts)
    rows_out.append({"reading": name, "precision": round(precision, 2),
                     "recall": round(recall, 2), "f1": round(score, 2),
                     "entities": sum(map(len, predicted)), "punctuation_at_an_end": edges,
                     "punctuation_word_at_an_end": stray, "punctuation_alone": alone})
  edges, _, _ = punctuation_counts(gold, texts)
  machine, date = common.machine(), datetime.date.today().isoformat()
  command = "python -m bench.bench_ner_raw_text --sentences=%d --epochs=%g --learning_rate=%g" % (
      args.sentences, args.epochs, args.learning_rate)
  table = ["# Raw-text NER: entities as the tagger learned its words", "",
           "Made by `%s` on %s: %s (%s), %d cores. Entities (type, text) of the first %d "
           "CoNLL-2003 dev sentences written as raw text (sacremoses' MosesDetokenizer); "
           "tagger: all-MiniLM-L6-v2 fine-tuned on the train file, %g epochs, learning rate "
           "%g, batch 32, length %d. Gold: %d entities, %d beginning or ending with "
           "punctuation (such as U.S.)." % (
               command, date, machine["cpu"], ", ".join(machine["cpu_flags"]),
               machine["cores"], len(dev), args.epochs, args.learning_rate, SEQ,
               sum(map(len, gold)), edges),
           "", "| reading | precision | recall | F1 | entities | punctuation at an end | "
           "a CoNLL word of punctuation alone at an end | punctuation alone |",
           "|---|---|---|---|---|---|---|---|"]
  table += ["| %(reading)s | %(precision).2f | %(recall).2f | %(f1).2f | %(entities)d | "
            "%(punctuation_at_an_end)d | %(punctuation_word_at_an_end)d | "
            "%(punctuation_alone)d |" % row for row in rows_out]
  print("\n".join(table))
  common.write_text(args.page + ".md", "\n".join(table) + "\n")
  common.write_text(args.page + ".json", json.dumps(
      {"command": command, "date": date, "machine": machine, "sentences": len(dev),
       "epochs": args.epochs, "learning_rate": args.learning_rate,
       "gold_entities": sum(map(len, gold)), "gold_punctuation_at_an_end": edges,
       "readings": rows_out}, indent=2) + "\n")


if __name__ == "__main__":
  main()
