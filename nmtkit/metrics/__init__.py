"""Metrics: sacrebleu's BLEU, chrF and TER; perplexity."""
