"""A fine-tuned SQuAD model as a SavedModel for TF Serving.

    export_span_predictor(model, "export/1", vocab_file, do_lower_case=True,
                          max_seq_length=384, doc_stride=128, ...)

Signatures:
  * `serving_default`: `question` and `context` strings in; `answer` (what
    run_squad.py's predictions.json would say) with the `start_logit`,
    `end_logit` and `score` of the best span out (plus `null_odds` for SQuAD
    2.0). Windows, n-best ranking and the projection of the answer onto the
    context run inside the graph (serving/squad_ops.py).
  * `serve_features`: `input_ids`, `input_mask`, `segment_ids` of windows in,
    `start_logits` and `end_logits` out.
"""

import tensorflow as tf

from serving import export
from serving import squad_ops


class SpanServer(export.Server):
  """What a SQuAD SavedModel holds: the span model, the tokenizer and the
  run_squad.py settings its answers depend on."""

  def __init__(self, model, tokenizer, max_seq_length=384, doc_stride=128,
               max_query_length=64, n_best_size=20, max_answer_length=30,
               version_2_with_negative=False, null_score_diff_threshold=0.0, limits=None):
    super().__init__(model, tokenizer, name="span_server", limits=limits)
    self.settings = dict(
        max_seq_length=max_seq_length, doc_stride=doc_stride,
        max_query_length=max_query_length, n_best_size=n_best_size,
        max_answer_length=max_answer_length,
        version_2_with_negative=version_2_with_negative,
        null_score_diff_threshold=null_score_diff_threshold)

  def logits(self, features):
    outputs = export.run_model(self.model, features,
                               token_outputs=("start_logits", "end_logits"))
    return {"start_logits": tf.cast(outputs["start_logits"], tf.float32),
            "end_logits": tf.cast(outputs["end_logits"], tf.float32)}

  def answers(self, question, context):
    question, context = self.within_limits(question=question, context=context)
    s = self.settings
    features = squad_ops.windows(self.tokenizer, question, context, s["max_seq_length"],
                                   s["doc_stride"], s["max_query_length"])
    logits = self.logits(features)
    return squad_ops.best_answers(
        self.tokenizer, features, logits["start_logits"], logits["end_logits"],
        tf.shape(question)[0], s["n_best_size"], s["max_answer_length"],
        s["version_2_with_negative"], s["null_score_diff_threshold"])


def span_signatures(server):
  """serving_default (question, context -> answer) and serve_features."""
  @tf.function(input_signature=[export.text_spec("question"), export.text_spec("context")])
  def serve_text(question, context):
    return server.answers(question, context)

  return export.concrete_functions({
      "serving_default": serve_text,
      "serve_features": export.features_function(server.logits),
  })


def export_span_predictor(model, export_dir, vocab_file, do_lower_case, precision="float32",
                          **settings):
  """Writes a SQuAD model's SavedModel; `settings` are SpanServer's keyword
  arguments (run_squad.py's flags of the same names), `precision`:
  export.in_precision. Returns export_dir."""
  model = export.in_precision(model, precision)
  server = SpanServer(model, export.graph_tokenizer(vocab_file, do_lower_case), **settings)
  return export.save(server, export_dir, span_signatures(server))
