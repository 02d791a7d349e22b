"""The Keras BERT model and how it is trained and run.

config.py, heads.py, bert_model.py and blocks/ (layers, fused kernels,
packed tokens, deferred weights): the model;
checkpoints/: the original's, our and Hugging Face's checkpoints, their
conversion and loading; optimization.py: the original's optimizer; losses.py,
training.py (the one training driver), strategy.py (tf.distribute
strategies), pretraining.py (objectives, eval metrics), inference.py
(running a model over a dataset), pooling.py (token vectors pooled into one
per text). Imports no data preparation, task or serving code.
"""

from modeling.bert_model import BertClassifier
from modeling.bert_model import BertEmbedder
from modeling.bert_model import BertModel
from modeling.bert_model import BertMultipleChoice
from modeling.bert_model import BertPretrainer
from modeling.bert_model import BertSpanPredictor
from modeling.bert_model import BertTagger
from modeling.bert_model import BertWithHeads
from modeling.bert_model import BertWindowClassifier
from modeling.bert_model import InvalidInputError
from modeling.checkpoints import CheckpointMismatchError
from modeling.checkpoints import load_checkpoint
from modeling.checkpoints import load_original_checkpoint
from modeling.checkpoints import save_checkpoint
from modeling.checkpoints import save_original_checkpoint
from modeling.config import BertConfig
from modeling.blocks.deferred_init import deferred_initialization
