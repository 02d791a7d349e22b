"""Text to TFRecords: tokenization, pre-training instances, fine-tuning features."""
