# Two entry points: `make demo` (end-to-end run on the bundled corpus) and
# `make test`. Both create .venv and install requirements.txt on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat requirements.txt | cksum | cut -d' ' -f1)

# The demo's inputs; point DEMO_CORPUS at your own text (one sentence per
# line, blank line between documents) to run the same pipeline on it.
DEMO_DIR ?= demo_output
DEMO_CORPUS ?= $(DEMO_DIR)/corpus.txt
DEMO_VOCAB_SIZE ?= 8000
DEMO_STEPS ?= 300
DEMO_EPOCHS ?= 2
DEMO_FINETUNE_LR ?= 2e-4

export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: install test demo bench clean

$(STAMP): requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	rm -f $(VENV)/.installed-*
	touch $@

install: $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q tests

$(DEMO_DIR)/corpus.txt: | $(STAMP)
	mkdir -p $(DEMO_DIR)
	$(PY) -m data_prep.demo_corpus --output_file=$@

demo: $(STAMP) $(DEMO_CORPUS)
	mkdir -p $(DEMO_DIR)
	$(PY) -m vocab.learn_vocab --input_file=$(DEMO_CORPUS) \
	  --output_file=$(DEMO_DIR)/vocab.txt --vocab_size=$(DEMO_VOCAB_SIZE)
	$(PY) -m data_prep.create_pretraining_data --input_file=$(DEMO_CORPUS) \
	  --output_file=$(DEMO_DIR)/pretraining_data.tfrecord \
	  --vocab_file=$(DEMO_DIR)/vocab.txt --do_lower_case=True \
	  --max_seq_length=128 --max_predictions_per_seq=20 --dupe_factor=5
	$(PY) -c "import json; n = sum(1 for _ in open('$(DEMO_DIR)/vocab.txt', encoding='utf-8')); \
	  json.dump(dict(vocab_size=n, hidden_size=128, num_hidden_layers=2, num_attention_heads=2, \
	  intermediate_size=512, hidden_act='gelu', hidden_dropout_prob=0.1, \
	  attention_probs_dropout_prob=0.1, max_position_embeddings=512, type_vocab_size=2, \
	  initializer_range=0.02), open('$(DEMO_DIR)/bert_config.json', 'w'), indent=2)"
	rm -rf $(DEMO_DIR)/pretraining_output
	$(PY) run_pretraining.py --input_file=$(DEMO_DIR)/pretraining_data.tfrecord \
	  --output_dir=$(DEMO_DIR)/pretraining_output --do_train --do_eval \
	  --bert_config_file=$(DEMO_DIR)/bert_config.json --train_batch_size=32 \
	  --max_seq_length=128 --max_predictions_per_seq=20 --num_train_steps=$(DEMO_STEPS) \
	  --num_warmup_steps=30 --learning_rate=1e-3 --save_checkpoints_steps=100 \
	  --iterations_per_loop=50 --max_eval_steps=20 --eval_batch_size=32
	@echo "Eval results ($(DEMO_DIR)/pretraining_output/eval_results.txt):"
	@cat $(DEMO_DIR)/pretraining_output/eval_results.txt
	$(PY) -m data_prep.demo_pairs --output_dir=$(DEMO_DIR)/pairs
	rm -rf $(DEMO_DIR)/classifier_output $(DEMO_DIR)/export
	$(PY) run_classifier.py --task_name=MRPC --do_train --do_eval --do_predict \
	  --data_dir=$(DEMO_DIR)/pairs --vocab_file=$(DEMO_DIR)/vocab.txt \
	  --bert_config_file=$(DEMO_DIR)/bert_config.json \
	  --init_checkpoint=$(DEMO_DIR)/pretraining_output \
	  --output_dir=$(DEMO_DIR)/classifier_output --max_seq_length=64 \
	  --train_batch_size=32 --learning_rate=$(DEMO_FINETUNE_LR) --num_train_epochs=$(DEMO_EPOCHS) \
	  --iterations_per_loop=50 --eval_batch_size=50 --predict_batch_size=50 \
	  --export_dir=$(DEMO_DIR)/export
	@echo "Fine-tuning eval results ($(DEMO_DIR)/classifier_output/eval_results.txt;" \
	  "always answering one label scores 0.5):"
	@cat $(DEMO_DIR)/classifier_output/eval_results.txt
	@echo "The exported SavedModel ($(DEMO_DIR)/export), asked from a fresh process:"
	$(PY) modeling/query_export.py --export_dir=$(DEMO_DIR)/export \
	  --text_a="In the beginning God created the heaven and the earth." \
	  --text_b="And the earth was without form, and void." \
	  --text_a="In the beginning God created the heaven and the earth." \
	  --text_b="Jesus wept."
	@echo "Demo outputs are in $(DEMO_DIR)/"

bench: $(STAMP)
	$(PY) -m pip install -q -r bench/requirements.txt
	$(PY) bench/bench_tokenizer.py
	$(PY) bench/bench_create_pretraining_data.py

clean:
	rm -rf $(DEMO_DIR) bench/output
