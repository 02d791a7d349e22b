"""SQuAD predictions: the original's predictions.json, nbest_predictions.json
and null_odds.json, byte for byte.

`RawResult`, `write_predictions` and `get_final_text` keep the original
`run_squad.py`'s names and behaviour: the n-best start/end pairs of every
window (only the window where a token has its maximum context may start an
answer), the SQuAD 2.0 null answer and its threshold, and the projection of
the WordPiece span back onto the original text.
"""

import collections
import heapq
import math

from absl import logging

from data_prep import tokenization
from plumbing.errors import UserError
from plumbing import files

RawResult = collections.namedtuple("RawResult",
                                   ["unique_id", "start_logits", "end_logits"])


def raw_results(unique_ids, start_logits, end_logits):
  """RawResults of the model's outputs (numpy arrays, a row per feature)."""
  return [RawResult(unique_id=int(u), start_logits=[float(x) for x in s],
                    end_logits=[float(x) for x in e])
          for u, s, e in zip(unique_ids, start_logits, end_logits)]

_Candidate = collections.namedtuple(
    "_Candidate", ["feature_index", "start_index", "end_index", "start_logit",
                   "end_logit"])
_Entry = collections.namedtuple("_Entry", ["text", "start_logit", "end_logit"])


def _get_best_indexes(logits, n_best_size):
  """Indexes of the n largest logits; equal logits keep the lower index first
  (heapq.nlargest is documented to equal a stable reverse sort)."""
  return heapq.nlargest(n_best_size, range(len(logits)), key=logits.__getitem__)


def _compute_softmax(scores):
  """Softmax in Python doubles, summed in entry order as the original."""
  if not scores:
    return []
  top = max(scores)
  exps = [math.exp(s - top) for s in scores]
  total = 0.0
  for e in exps:
    total += e
  return [e / total for e in exps]


def _strip_spaces(text):
  """The text without " " and, per kept character, its index in `text`."""
  kept = []
  index_of = []
  for i, char in enumerate(text):
    if char != " ":
      kept.append(char)
      index_of.append(i)
  return "".join(kept), index_of


def get_final_text(pred_text, orig_text, do_lower_case, verbose_logging=False):
  """Maps a prediction in normalised tokens back onto the original text.

  `pred_text` (e.g. "steve smith") is found in the basic-tokenized
  `orig_text` (e.g. "Steve Smith's"), and its ends mapped back through the
  space-free forms of both. Whenever that fails the whole `orig_text` is
  returned, as the original does.
  """
  def fail(message, *args):
    if verbose_logging:
      logging.info(message, *args)
    return orig_text

  tokenizer = tokenization.BasicTokenizer(do_lower_case=do_lower_case)
  tok_text = " ".join(tokenizer.tokenize(orig_text))
  start = tok_text.find(pred_text)
  if start == -1:
    return fail("Unable to find text: '%s' in '%s'", pred_text, orig_text)
  end = start + len(pred_text) - 1

  orig_ns_text, orig_ns_to_s = _strip_spaces(orig_text)
  tok_ns_text, tok_ns_to_s = _strip_spaces(tok_text)
  if len(orig_ns_text) != len(tok_ns_text):
    return fail("Length not equal after stripping spaces: '%s' vs '%s'",
                orig_ns_text, tok_ns_text)
  tok_s_to_ns = {s: ns for ns, s in enumerate(tok_ns_to_s)}

  def to_orig(position):
    ns = tok_s_to_ns.get(position)
    if ns is None or ns >= len(orig_ns_to_s):
      return None
    return orig_ns_to_s[ns]

  orig_start = to_orig(start)
  if orig_start is None:
    return fail("Couldn't map start position")
  orig_end = to_orig(end)
  if orig_end is None:
    return fail("Couldn't map end position")
  return orig_text[orig_start:orig_end + 1]


def _as_floats(values):
  """Logits as Python floats (float32 widened exactly), so sums are doubles."""
  if hasattr(values, "tolist"):
    return [float(v) for v in values.tolist()]
  return [float(v) for v in values]


def _candidates(features, results, n_best_size, max_answer_length, v2):
  """Valid (start, end) pairs of every window, and the null candidate (v2)."""
  candidates = []
  # (score, feature_index, start_logit, end_logit); the original's "large"
  # starting score, kept when an example has no window at all.
  null = (1000000, 0, 0, 0)
  for feature_index, feature in enumerate(features):
    result = results[feature.unique_id]
    start_logits = _as_floats(result.start_logits)
    end_logits = _as_floats(result.end_logits)
    if v2:
      null_score = start_logits[0] + end_logits[0]
      if null_score < null[0]:
        null = (null_score, feature_index, start_logits[0], end_logits[0])
    num_tokens = len(feature.tokens)
    orig_map = feature.token_to_orig_map
    max_context = feature.token_is_max_context
    ends = [e for e in _get_best_indexes(end_logits, n_best_size)
            if e < num_tokens and e in orig_map]
    for start in _get_best_indexes(start_logits, n_best_size):
      if start >= num_tokens or start not in orig_map:
        continue
      if not max_context.get(start, False):
        continue
      for end in ends:
        if end < start or end - start + 1 > max_answer_length:
          continue
        candidates.append(_Candidate(feature_index, start, end,
                                     start_logits[start], end_logits[end]))
  if v2:
    candidates.append(_Candidate(null[1], 0, 0, null[2], null[3]))
  return candidates, null


def _span_text(example, feature, candidate, do_lower_case, verbose_logging):
  """The original-text answer of a non-null candidate."""
  pieces = feature.tokens[candidate.start_index:candidate.end_index + 1]
  tok_text = " ".join(pieces).replace(" ##", "").replace("##", "")
  tok_text = " ".join(tok_text.strip().split())
  first = feature.token_to_orig_map[candidate.start_index]
  last = feature.token_to_orig_map[candidate.end_index]
  orig_text = " ".join(example.doc_tokens[first:last + 1])
  return get_final_text(tok_text, orig_text, do_lower_case, verbose_logging)


def _nbest(example, features, candidates, null, n_best_size, do_lower_case,
           verbose_logging, v2):
  """The n-best entries (distinct texts, best first) of one example."""
  candidates = sorted(candidates, key=lambda c: c.start_logit + c.end_logit,
                      reverse=True)
  seen = set()
  entries = []
  for candidate in candidates:
    if len(entries) >= n_best_size:
      break
    if candidate.start_index > 0:
      text = _span_text(example, features[candidate.feature_index], candidate,
                        do_lower_case, verbose_logging)
      if text in seen:
        continue
    else:
      text = ""
    seen.add(text)
    entries.append(_Entry(text, candidate.start_logit, candidate.end_logit))
  if v2 and "" not in seen:
    entries.append(_Entry("", null[2], null[3]))
  if not entries:
    entries.append(_Entry("empty", 0.0, 0.0))
  return entries


def _predict_example(example, features, results, n_best_size, max_answer_length,
                     do_lower_case, v2, threshold, verbose_logging):
  """(prediction, n-best JSON list, null score difference or None)."""
  candidates, null = _candidates(features, results, n_best_size,
                                 max_answer_length, v2)
  entries = _nbest(example, features, candidates, null, n_best_size,
                   do_lower_case, verbose_logging, v2)
  probs = _compute_softmax([e.start_logit + e.end_logit for e in entries])
  nbest_json = []
  for entry, prob in zip(entries, probs):
    output = collections.OrderedDict()
    output["text"] = entry.text
    output["probability"] = prob
    output["start_logit"] = entry.start_logit
    output["end_logit"] = entry.end_logit
    nbest_json.append(output)
  if not v2:
    return entries[0].text, nbest_json, None
  best = next((e for e in entries if e.text), None)
  if best is None:
    # No span at all (the original would crash): predict no answer, as if
    # the best span scored 0.
    return "", nbest_json, null[0]
  score_diff = null[0] - best.start_logit - best.end_logit
  prediction = "" if score_diff > threshold else best.text
  return prediction, nbest_json, score_diff


def write_predictions(all_examples, all_features, all_results, n_best_size,
                      max_answer_length, do_lower_case, output_prediction_file,
                      output_nbest_file, output_null_log_odds_file,
                      version_2_with_negative=False, null_score_diff_threshold=0.0,
                      verbose_logging=False):
  """Writes predictions.json, nbest_predictions.json and (v2) null_odds.json
  exactly as the original; returns (predictions, nbest, null_odds) dicts."""
  logging.info("Writing predictions to: %s", output_prediction_file)
  logging.info("Writing nbest to: %s", output_nbest_file)
  features_of = collections.defaultdict(list)
  for feature in all_features:
    features_of[feature.example_index].append(feature)
  results = {result.unique_id: result for result in all_results}

  predictions = collections.OrderedDict()
  nbest = collections.OrderedDict()
  null_odds = collections.OrderedDict()
  for example_index, example in enumerate(all_examples):
    features = features_of[example_index]
    missing = [f.unique_id for f in features if f.unique_id not in results]
    if missing:
      raise UserError("No model output for feature %d of question %r." %
                      (missing[0], example.qas_id))
    prediction, nbest_json, score_diff = _predict_example(
        example, features, results, n_best_size, max_answer_length,
        do_lower_case, version_2_with_negative, null_score_diff_threshold,
        verbose_logging)
    predictions[example.qas_id] = prediction
    nbest[example.qas_id] = nbest_json
    if version_2_with_negative:
      null_odds[example.qas_id] = score_diff

  files.write_json(output_prediction_file, predictions, indent=4)
  files.write_json(output_nbest_file, nbest, indent=4)
  if version_2_with_negative:
    files.write_json(output_null_log_odds_file, null_odds, indent=4)
  return predictions, nbest, null_odds
