"""Training options (the model's own options come from the registry)."""
from nmtkit.config import Option
from nmtkit.train.optim import OPTIMIZERS
from nmtkit.train.schedules import SCHEDULES

TRAIN_OPTIONS = [
    Option("data", "", "corpus folder written by 'nmtkit preprocess'"),
    Option("arch", "rnnsearch", "architecture: one of the registered models (docs/models.md)"),
    Option("save_dir", "checkpoints", "folder for best.pt, last.pt, config.yaml and train.jsonl"),
    Option("batch_size", 64, "sentences per batch, or target+source tokens per batch with --batch-type tokens"),
    Option("batch_type", "sents", "count batches in sentences or tokens", choices=("sents", "tokens")),
    Option("max_len", 100, "skip (and count) training pairs longer than this many tokens on either side"),
    Option("optimizer", "adam", "optimiser", choices=OPTIMIZERS),
    Option("lr", 0.0, "learning rate (0: the optimiser's usual one: Adam 0.001, Adadelta 1.0, SGD 0.1)"),
    Option("weight_decay", 0.0, "L2 weight decay"),
    Option("clip_norm", 1.0, "clip the gradient norm to this value (0: no clipping)"),
    Option("label_smoothing", 0.0, "label smoothing epsilon"),
    Option("lr_schedule", "decay-on-worse", "learning-rate schedule: decay-on-worse (multiply by --lr-decay when the "
           "validation metric gets worse) or inverse-sqrt (linear warm-up, then 1/sqrt(step))", choices=tuple(SCHEDULES)),
    Option("warmup_steps", 4000, "inverse-sqrt: updates of linear warm-up to --lr"),
    Option("decay_metric", "bleu", "validation metric for learning-rate decay, early stopping and best.pt",
           choices=("bleu", "ppl")),
    Option("lr_decay", 0.5, "decay-on-worse: multiply the learning rate by this when the validation metric gets worse (1: never)"),
    Option("min_lr", 0.0, "do not decay the learning rate below this"),
    Option("patience", 10, "stop after this many validations without a new best (0: never)"),
    Option("max_epochs", 0, "stop after this many epochs (0: no limit)"),
    Option("max_steps", 0, "stop after this many updates (0: no limit)"),
    Option("max_time", 0.0, "stop after this many minutes of wall-clock time, validation included (0: no limit)"),
    Option("valid_every", 1000, "validate (perplexity and BLEU) and save checkpoints every N updates"),
    Option("save_every", 0, "also save last.pt every N updates between validations (0: only at validation)"),
    Option("valid_beam", 1, "beam size for validation BLEU (1: greedy)"),
    Option("valid_max_sentences", 0, "translate at most this many validation sentences for BLEU (0: all)"),
    Option("valid_batch_size", 32, "sentences per batch when translating the validation set"),
    Option("max_len_a", 1.5, "validation output length limit a·|x| + b: a"),
    Option("max_len_b", 10, "validation output length limit a·|x| + b: b"),
    Option("log_every", 50, "log training loss, perplexity and speed every N updates"),
    Option("seed", 1, "random seed (batch order, initialisation, dropout)"),
    Option("device", "auto", "cpu, cuda, cuda:N, or auto (a GPU if there is one)"),
    Option("amp", False, "automatic mixed precision (float16 on GPUs, bfloat16 on CPUs)"),
    Option("threads", 0, "CPU threads for PyTorch (0: PyTorch's default)"),
    Option("dist_timeout", 300.0, "seconds to wait for all torchrun processes to join before giving up"),
]
