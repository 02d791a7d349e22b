"""Text to tokens to pre-training records: the original's tokenizer and its
masked-LM + next-sentence data generator.

tokenization.py (FullTokenizer); create_pretraining_data.py and
beam_pretraining_data.py (what the top-level commands of those names do);
pretraining/ (the generator: corpus, instances, records, the tf.data reader,
the Beam steps). Fine-tuning tasks' features live with their tasks, in
tasks/.
"""
