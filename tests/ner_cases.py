"""Tagged sentences to score: (word, gold tag, predicted tag) triples per
sentence, named cases, made deterministically. The conlleval reference maker
scores them with the CoNLL scorer; tests/test_ner_data.py scores them with
ours and compares."""

import random

TYPES = ("PER", "LOC", "ORG", "MISC")

# Hand-made: each sentence a rule of the scorer.
HAND = [
    # Right, wrong type, too short, too long.
    [("John", "B-PER", "B-PER"), ("Smith", "I-PER", "I-PER"), ("visited", "O", "O"),
     ("New", "B-LOC", "B-ORG"), ("York", "I-LOC", "I-ORG"), ("and", "O", "O"),
     ("the", "O", "B-ORG"), ("United", "B-ORG", "I-ORG"), ("Nations", "I-ORG", "I-ORG"),
     (".", "O", "O")],
    # No entity at all, gold or predicted.
    [("It", "O", "O"), ("rained", "O", "O"), (".", "O", "O")],
    # Gold entities none of which is found; one predicted where there is none.
    [("Paris", "B-LOC", "O"), ("and", "O", "B-MISC"), ("Rome", "B-LOC", "O")],
    # Adjacent entities of one type; an entity at the sentence's end.
    [("Germany", "B-LOC", "B-LOC"), ("France", "B-LOC", "I-LOC"), ("met", "O", "O"),
     ("Jane", "B-PER", "B-PER")],
    # Predictions beginning with I- (IOB1-style) and a type switch inside.
    [("the", "O", "I-ORG"), ("Bank", "B-ORG", "I-ORG"), ("of", "I-ORG", "I-ORG"),
     ("England", "I-ORG", "I-LOC"), ("said", "O", "O"), ("Reuters", "B-ORG", "I-ORG")],
    # A type with a hyphen (split at the first one), one-token entities.
    [("Euro", "B-MISC-X", "B-MISC-X"), ("2004", "I-MISC-X", "O"), ("Bob", "B-PER", "B-PER")],
    # An entity running to the sentence's end, the next starting with I-.
    [("from", "O", "O"), ("South", "B-LOC", "B-LOC"), ("Africa", "I-LOC", "I-LOC")],
    [("Africa", "I-LOC", "I-LOC"), ("wins", "O", "O")],
]

# IOB1 as the shared task's own files (B- only after an entity of the same type).
IOB1 = [
    [("EU", "I-ORG", "I-ORG"), ("rejects", "O", "O"), ("German", "I-MISC", "I-MISC"),
     ("call", "O", "O"), ("to", "O", "O"), ("boycott", "O", "O"), ("British", "I-MISC", "B-MISC"),
     ("lamb", "O", "O"), (".", "O", "O")],
    [("Peter", "I-PER", "I-PER"), ("Blackburn", "I-PER", "I-PER"), ("Mary", "B-PER", "I-PER"),
     ("Jones", "I-PER", "I-PER"), ("in", "O", "O"), ("Brussels", "I-LOC", "I-LOC")],
]

# BIOES: scored in its IOB2 form (the scorer knows no S-).
BIOES = [
    [("John", "B-PER", "B-PER"), ("Smith", "E-PER", "E-PER"), ("Paris", "S-LOC", "S-LOC"),
     ("Rome", "S-LOC", "S-LOC"), ("in", "O", "O"), ("United", "B-ORG", "S-ORG"),
     ("Nations", "E-ORG", "S-ORG")],
    [("the", "O", "O"), ("Big", "B-MISC", "B-MISC"), ("Red", "I-MISC", "I-MISC"),
     ("Thing", "E-MISC", "E-MISC"), ("Ann", "S-PER", "B-PER"), ("Lee", "O", "E-PER")],
]


def _random_tags(rng, length):
  tags, previous = [], "O"
  for _ in range(length):
    roll = rng.random()
    if roll < 0.55:
      tag = "O"
    elif roll < 0.75 or previous == "O":
      tag = "B-" + rng.choice(TYPES)
    else:
      tag = "I-" + previous[2:]
    tags.append(tag)
    previous = tag
  return tags


def _perturbed(rng, tags):
  out = list(tags)
  for i in range(len(out)):
    roll = rng.random()
    if roll < 0.08:
      out[i] = "O"
    elif roll < 0.14:
      out[i] = rng.choice(("B-", "I-")) + rng.choice(TYPES)
  return out


def random_case(seed=2003, sentences=300):
  """Seeded random IOB2 gold tags and predictions made from them with
  errors of every kind (the scorer's rules on arbitrary sequences)."""
  rng = random.Random(seed)
  case = []
  for n in range(sentences):
    gold = _random_tags(rng, rng.randint(1, 25))
    case.append([("w%d_%d" % (n, i), g, p) for i, (g, p) in
                 enumerate(zip(gold, _perturbed(rng, gold)))])
  return case


def bioes_as_iob2(tag):
  """A valid BIOES tag in IOB2 (S- begins, E- continues), as a user would
  convert it before running the scorer."""
  if tag[:2] == "S-":
    return "B-" + tag[2:]
  if tag[:2] == "E-":
    return "I-" + tag[2:]
  return tag


def conll_dev_case(path, seed=17):
  """A CoNLL file's gold tags, and predictions with seeded errors (each
  word's tag replaced with probability 0.1)."""
  rng = random.Random(seed)
  sentences, current = [], []
  with open(path, encoding="utf-8") as f:
    for line in f.read().splitlines():
      fields = line.split()
      if not fields or fields[0] == "-DOCSTART-":
        if current:
          sentences.append(current)
        current = []
        continue
      gold = fields[-1]
      guess = gold if rng.random() >= 0.1 else rng.choice(
          ["O"] + [p + t for p in ("B-", "I-") for t in TYPES])
      current.append((fields[0], gold, guess))
  if current:
    sentences.append(current)
  return sentences


CASES = {"hand": HAND, "iob1": IOB1, "bioes": BIOES, "random": random_case()}
