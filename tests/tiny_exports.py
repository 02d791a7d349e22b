"""One small SavedModel of every kind the project exports, from the tiny
eval_reference config with fixed random weights: what the tests that read
or query exports share."""

import numpy as np

from conftest import data_file
from classifier_runs import CONFIG, UNCASED
import modeling
from modeling import bert_model
from modeling import heads
from serving import classifier, embedding, fill_mask, multiple_choice, squad, tagger
from tasks.classification import windows


def fixed_weights(model):
  """The model with weights drawn from a fixed seed: the same answers every run."""
  rng = np.random.default_rng(0)
  for variable in model.variables:
    variable.assign(rng.normal(0, 0.3, variable.shape).astype(np.float32))
  return model


def makers():
  """{kind: make(export_dir)}, one of each export the scripts write: the
  classifiers (single sentence, pair, windowed, bfloat16), SQuAD, NER,
  fill-mask, SWAG and sentence vectors."""
  config = modeling.BertConfig.from_json_file(CONFIG)
  vocab = data_file(UNCASED)
  return {
      "single": lambda d: classifier.export_classifier(
          fixed_weights(modeling.BertClassifier(config, num_labels=2)), d, vocab, True, 32,
          ["negative", "positive"], sentence_pair=False),
      "pair": lambda d: classifier.export_classifier(
          fixed_weights(modeling.BertClassifier(config, num_labels=3)), d, vocab, True, 32,
          ["entailment", "neutral", "contradiction"]),
      "windowed": lambda d: classifier.export_classifier(
          fixed_weights(modeling.BertWindowClassifier(config, num_labels=2)), d, vocab, True,
          32, ["negative", "positive"], sentence_pair=False,
          windows=windows.WindowSettings(stride=8, max_windows=4)),
      "bfloat16": lambda d: classifier.export_classifier(
          fixed_weights(modeling.BertClassifier(config, num_labels=2)), d, vocab, True, 32,
          ["negative", "positive"], precision="bfloat16"),
      "squad": lambda d: squad.export_span_predictor(
          fixed_weights(modeling.BertSpanPredictor(config)), d, vocab, True,
          max_seq_length=32, doc_stride=8, max_query_length=8),
      "ner": lambda d: tagger.export_tagger(
          fixed_weights(modeling.BertTagger(config, 5)), d, vocab, True, 16, 8,
          ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"], "treebank"),
      "fill_mask": lambda d: fill_mask.export_fill_mask(
          fixed_weights(bert_model.BertWithHeads(bert_model.BertModel(config),
                                                 [heads.MaskedLMHead(config)])), d, vocab, True,
          32, 3),
      "swag": lambda d: multiple_choice.export_multiple_choice(
          fixed_weights(modeling.BertMultipleChoice(config, num_choices=4)), d, vocab, True,
          32),
      "embedding": lambda d: embedding.export_embedder(
          fixed_weights(modeling.BertModel(config)), d, vocab, True, 32, "max", True),
  }


def write(directory, kinds):
  """{kind: export directory} for each of `kinds`, written under
  `directory`/<kind>/1 (a pathlib.Path) as TF Serving lays versions out."""
  make = makers()
  written = {}
  for kind in kinds:
    export_dir = str(directory / kind / "1")
    make[kind](export_dir)
    written[kind] = export_dir
  return written
