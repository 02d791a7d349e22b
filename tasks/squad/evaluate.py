"""SQuAD's official metrics (v1.1 and v2.0 evaluation scripts), reimplemented.

Answers are compared after normalisation (lower case, no punctuation, no
articles "a"/"an"/"the", single spaces); a question scores the best exact
match and token F1 over its gold answers. In v2.0 an unanswerable question's
only gold answer is "", and the optional no-answer probabilities give the
"best threshold" scores. All scores are percentages, as the scripts print.

One deliberate difference: a question without a prediction scores 0 in
both versions (v1.1's rule; the v2.0 script would skip or crash).
"""

import collections
import json
import re
import string

from absl import logging

from plumbing import files

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(text):
  """Lower-cases, drops punctuation and articles, collapses whitespace."""
  text = text.lower()
  text = "".join(c for c in text if c not in _PUNCTUATION)
  text = _ARTICLES.sub(" ", text)
  return " ".join(text.split())


def exact_match_score(prediction, ground_truth):
  return normalize_answer(prediction) == normalize_answer(ground_truth)


def f1_score(prediction, ground_truth, empty_matches_empty=False):
  """Token-overlap F1 of the normalised answers.

  v2.0 counts two empty answers as a match (`empty_matches_empty`); v1.1
  scores any comparison involving an empty answer 0.
  """
  predicted = normalize_answer(prediction).split()
  gold = normalize_answer(ground_truth).split()
  if empty_matches_empty and (not predicted or not gold):
    return float(predicted == gold)
  common = collections.Counter(predicted) & collections.Counter(gold)
  overlap = sum(common.values())
  if overlap == 0:
    return 0.0
  precision = overlap / len(predicted)
  recall = overlap / len(gold)
  return 2 * precision * recall / (precision + recall)


def _questions(dataset_json):
  """(id, gold texts, has an answer) per question, in file order."""
  data = dataset_json["data"] if isinstance(dataset_json, dict) else dataset_json
  for article in data:
    for paragraph in article["paragraphs"]:
      for qa in paragraph["qas"]:
        golds = [a["text"] for a in qa.get("answers", [])]
        yield qa["id"], golds, bool(qa.get("is_impossible", False))


def has_answers(dataset_json, version_2_with_negative=False):
  """Whether the file can be scored: some question has a gold answer (or, in
  v2.0, is marked unanswerable). Test sets without answers cannot."""
  for _, golds, impossible in _questions(dataset_json):
    if golds or (version_2_with_negative and impossible):
      return True
  return False


def _has_answer(questions):
  # As the v2.0 script: a question is answerable iff its "answers" list is
  # not empty (SQuAD 2.0 keeps unanswerable ones' spans in "plausible_answers").
  return {qid: bool(golds) for qid, golds, _ in questions}


def _is_version_2(dataset_json, questions):
  version = dataset_json.get("version", "") if isinstance(dataset_json, dict) else ""
  return str(version).lstrip("v").startswith("2") or any(q[2] for q in questions)


def _raw_scores(questions, predictions, version_2):
  """Per question id: (exact 0/1, f1 in [0, 1]) before any no-answer threshold."""
  exact, f1 = collections.OrderedDict(), collections.OrderedDict()
  for qid, golds, _ in questions:
    if version_2:
      golds = [g for g in golds if normalize_answer(g)] or [""]
    if qid not in predictions:
      logging.warning("No prediction for question %s; it scores 0.", qid)
      exact[qid], f1[qid] = 0.0, 0.0
      continue
    prediction = predictions[qid]
    exact[qid] = float(max(exact_match_score(prediction, g) for g in golds))
    f1[qid] = max(f1_score(prediction, g, empty_matches_empty=version_2) for g in golds)
  return exact, f1


def _thresholded(scores, na_probs, has_answer, threshold):
  """A question predicted unanswerable (probability > threshold) scores 1 iff
  it really has no answer."""
  return {qid: (float(not has_answer[qid]) if na_probs.get(qid, 0.0) > threshold
                else score)
          for qid, score in scores.items()}


def _percent(scores, qids):
  return 100.0 * sum(scores[q] for q in qids) / len(qids)


def _best_threshold(predictions, scores, na_probs, has_answer):
  """(best score in percent, its threshold), searched as the v2.0 script does:
  start from "no answer everywhere" and admit questions by ascending
  probability, keeping the first strictly best running total."""
  current = best = sum(1 for qid in has_answer if not has_answer[qid])
  best_threshold = 0.0
  for qid in sorted(na_probs, key=lambda k: na_probs[k]):
    if qid not in scores:
      continue
    if has_answer[qid]:
      current += scores[qid]
    elif predictions.get(qid):
      current -= 1
    if current > best:
      best = current
      best_threshold = na_probs[qid]
  return 100.0 * best / len(scores), best_threshold


def evaluate(dataset_json, predictions, na_probs=None, na_prob_thresh=1.0,
             version_2=None):
  """The official scores of `predictions` ({id: text}) on a SQuAD dataset.

  `dataset_json` is the parsed file (or its "data" list). v1.1 gives
  `exact`, `f1`, `total` and `exact_match` (the v1.1 script's name); v2.0
  adds the HasAns_/NoAns_ splits and, with `na_probs` ({id: no-answer
  probability or null odds}), `best_exact`, `best_f1` and their thresholds.
  `version_2` defaults to the file's "version" (or any unanswerable question).
  """
  questions = list(_questions(dataset_json))
  if not questions:
    raise ValueError("The dataset has no questions.")
  if version_2 is None:
    version_2 = _is_version_2(dataset_json, questions)
  exact_raw, f1_raw = _raw_scores(questions, predictions, version_2)
  qids = list(exact_raw)
  result = collections.OrderedDict()
  if not version_2:
    result["exact"] = _percent(exact_raw, qids)
    result["f1"] = _percent(f1_raw, qids)
    result["total"] = len(qids)
    result["exact_match"] = result["exact"]
    return result

  has_answer = _has_answer(questions)
  probs = na_probs if na_probs is not None else {}
  exact = _thresholded(exact_raw, probs, has_answer, na_prob_thresh)
  f1 = _thresholded(f1_raw, probs, has_answer, na_prob_thresh)
  result["exact"] = _percent(exact, qids)
  result["f1"] = _percent(f1, qids)
  result["total"] = len(qids)
  for prefix, wanted in (("HasAns", True), ("NoAns", False)):
    subset = [q for q in qids if has_answer[q] == wanted]
    if subset:
      result[prefix + "_exact"] = _percent(exact, subset)
      result[prefix + "_f1"] = _percent(f1, subset)
      result[prefix + "_total"] = len(subset)
  if na_probs is not None:
    result["best_exact"], result["best_exact_thresh"] = _best_threshold(
        predictions, exact_raw, na_probs, has_answer)
    result["best_f1"], result["best_f1_thresh"] = _best_threshold(
        predictions, f1_raw, na_probs, has_answer)
  return result


def write_scores(predict_file, predictions, na_probs, path, version_2_with_negative):
  """Writes `evaluate`'s scores of `predictions` (qas_id -> answer; with
  `na_probs`, null odds, for 2.0) on the questions of `predict_file` to
  `path` (JSON) and logs them; does nothing if the file has no answers."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top  (gs:// paths)
  with tf.io.gfile.GFile(predict_file, "r") as f:
    dataset = json.load(f)
  if not has_answers(dataset, version_2_with_negative):
    logging.info("%s has no answers: no score.", predict_file)
    return None
  results = evaluate(dataset, predictions, na_probs=na_probs)
  files.write_json(path, results)
  logging.info("***** SQuAD evaluation (%s) *****", path)
  for key, value in results.items():
    logging.info("  %s = %s", key, value)
  return results
