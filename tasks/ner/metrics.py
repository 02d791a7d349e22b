"""Entity-level precision, recall and F1, counted as the CoNLL shared task's
scorer (conlleval, 2004 version) counts them, so the figures are the ones it
prints for the same predictions.

The scorer reads `word gold predicted` lines as one stream, a blank line
being an `O` boundary between sentences. An entity (a chunk) starts and ends
by rules on each pair of neighbouring tags; a predicted entity is correct
when it starts and ends where a gold one does, with the same type. Those
rules know IOB1, IOB2 and IOE tags, not S-: BIOES predictions are scored in
their IOB2 form (the same entities), as the scorer must be fed them.
"""

import collections

from tasks.ner import conll


def _ends(previous, current):
  """Whether an entity ends between two tags, each (prefix, type)."""
  (p, p_kind), (c, c_kind) = previous, current
  if (p, c) in (("B", "B"), ("B", "O"), ("I", "B"), ("I", "O"),
                ("E", "E"), ("E", "I"), ("E", "O")):
    return True
  return p not in ("O", ".") and p_kind != c_kind


def _starts(previous, current):
  """Whether an entity starts between two tags, each (prefix, type)."""
  (p, p_kind), (c, c_kind) = previous, current
  if (p, c) in (("B", "B"), ("I", "B"), ("O", "B"), ("O", "I"),
                ("E", "E"), ("E", "I"), ("O", "E")):
    return True
  return c not in ("O", ".") and p_kind != c_kind


class Counts(object):
  """The scorer's tallies: tokens, tokens tagged right, and per type the
  gold, predicted and correct entities."""

  def __init__(self):
    self.tokens = self.correct_tags = 0
    self.gold = collections.Counter()
    self.found = collections.Counter()
    self.correct = collections.Counter()

  def add(self, gold_tags, predicted_tags):
    """One sentence's tags (the scorer's stream, with a boundary after)."""
    if len(gold_tags) != len(predicted_tags):
      raise ValueError("%d gold tags, %d predicted" % (len(gold_tags), len(predicted_tags)))
    boundary = ("O", "")
    last_gold = last_guess = boundary if self.tokens else ("", "")
    in_correct = False
    pairs = [(conll.split_tag(g), conll.split_tag(p)) for g, p in zip(gold_tags, predicted_tags)]
    for gold, guess in pairs + [(boundary, boundary)]:
      if in_correct:
        gold_ends, guess_ends = _ends(last_gold, gold), _ends(last_guess, guess)
        if gold_ends and guess_ends and last_guess[1] == last_gold[1]:
          in_correct = False
          self.correct[last_gold[1]] += 1
        elif gold_ends != guess_ends or guess[1] != gold[1]:
          in_correct = False
      gold_starts, guess_starts = _starts(last_gold, gold), _starts(last_guess, guess)
      if gold_starts and guess_starts and guess[1] == gold[1]:
        in_correct = True
      if gold_starts:
        self.gold[gold[1]] += 1
      if guess_starts:
        self.found[guess[1]] += 1
      last_gold, last_guess = gold, guess
    # The boundary closes whatever was open: an entity open at it is correct
    # if both ended there (the boundary's O ends every entity).
    self.tokens += len(pairs)
    self.correct_tags += sum(1 for g, p in pairs if g == p)
    return self


def counts_of(gold_sentences, predicted_sentences, scheme="IOB2"):
  """Counts over sentences of tags (lists), in `scheme`; BIOES is scored in
  its IOB2 form."""
  counts = Counts()
  for gold, predicted in zip(gold_sentences, predicted_sentences):
    if scheme == "BIOES":
      gold, predicted = conll.to_iob2(gold), conll.to_iob2(predicted)
    counts.add(gold, predicted)
  return counts


def _prf(correct, found, gold):
  precision = correct / found if found else 0.0
  recall = correct / gold if gold else 0.0
  f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
  return precision, recall, f1


def scores(counts):
  """{eval_precision, eval_recall, eval_f1, eval_accuracy (tokens), and
  eval_<metric>_<TYPE> for each type}, as fractions."""
  precision, recall, f1 = _prf(sum(counts.correct.values()), sum(counts.found.values()),
                               sum(counts.gold.values()))
  results = {"eval_precision": precision, "eval_recall": recall, "eval_f1": f1,
             "eval_accuracy": counts.correct_tags / counts.tokens if counts.tokens else 0.0}
  for kind in sorted(set(counts.gold) | set(counts.found)):
    for name, value in zip(("precision", "recall", "f1"), _prf(
        counts.correct[kind], counts.found[kind], counts.gold[kind])):
      results["eval_%s_%s" % (name, kind)] = value
  return results


def report(counts):
  """The scorer's printed report for these counts (its layout and rounding)."""
  gold, found = sum(counts.gold.values()), sum(counts.found.values())
  correct = sum(counts.correct.values())
  precision, recall, f1 = (100 * v for v in _prf(correct, found, gold))
  lines = ["processed %d tokens with %d phrases; found: %d phrases; correct: %d." % (
      counts.tokens, gold, found, correct)]
  if counts.tokens:
    lines.append("accuracy: %6.2f%%; precision: %6.2f%%; recall: %6.2f%%; FB1: %6.2f" % (
        100 * counts.correct_tags / counts.tokens, precision, recall, f1))
  for kind in sorted(set(counts.gold) | set(counts.found)):
    p, r, f = (100 * v for v in _prf(counts.correct[kind], counts.found[kind],
                                     counts.gold[kind]))
    lines.append("%17s: precision: %6.2f%%; recall: %6.2f%%; FB1: %6.2f  %d" % (
        kind, p, r, f, counts.found[kind]))
  return "\n".join(lines) + "\n"
