"""The encoder's building blocks, under bert_model.py: its layers
(layers.py), their fused training kernels (fused.py), training on a padded
batch's real tokens only (packed_tokens.py), and building a model without
drawing the weights a checkpoint will give (deferred_init.py)."""
