"""The Keras BERT model, its heads, checkpoints and optimizers (see issue #3)."""
