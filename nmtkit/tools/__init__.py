"""Post-processing and analysis on top of search output: replace-unk and its lexicon."""
