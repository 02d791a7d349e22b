"""The Keras BERT model, its heads, checkpoints and optimizers."""

from modeling.bert_model import BertClassifier
from modeling.bert_model import BertModel
from modeling.bert_model import BertMultipleChoice
from modeling.bert_model import BertPretrainer
from modeling.bert_model import BertSpanPredictor
from modeling.bert_model import InvalidInputError
from modeling.checkpoints import CheckpointMismatchError
from modeling.checkpoints import load_checkpoint
from modeling.checkpoints import load_original_checkpoint
from modeling.checkpoints import save_checkpoint
from modeling.checkpoints import save_original_checkpoint
from modeling.config import BertConfig
