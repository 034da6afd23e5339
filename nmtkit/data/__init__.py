"""Vocabularies, text input, HDF5 shards and batching."""
