"""nmtkit: neural machine translation and image captioning with attention."""

__version__ = "0.1.0"
