"""Training options (the model's own options come from the registry)."""
from nmtkit.config import (
                           ABOVE_ZERO,
                           BEAM,
                           COUNT,
                           DEVICE,
                           LENGTH_A,
                           LENGTH_B,
                           POSITIVE,
                           PROBABILITY,
                           THREADS,
                           Option,
                           Range,
)
from nmtkit.metrics.text import VALID_TOKENIZERS, VALIDATION_METRICS
from nmtkit.train.optim import DEFAULT_LR, NAMES, OPTIMIZERS
from nmtkit.train.profiling import PROFILE
from nmtkit.train.schedules import SCHEDULES

TRAIN_OPTIONS = [
    Option("data", "", "corpus folder written by 'nmtkit preprocess'", metavar="DIR"),
    Option("arch", "rnnsearch", "architecture: one of the registered models (docs/models.md)", metavar="NAME"),
    Option("save_dir", "checkpoints", "folder for best.pt, last.pt, config.yaml and train.jsonl", metavar="DIR"),
    Option("batch_size", 64, "sentences per batch, or with --batch-type tokens its padded tokens: sentences "
           "× (their longest source or target + 1)",
           allows=POSITIVE),
    Option("batch_type", "sents", "count batches in sentences or tokens", choices=("sents", "tokens")),
    Option("accum_steps", 1, "batches per update: their gradients are summed into one update, the same as one "
           "batch of their union", allows=Range(1, 1024)),
    Option("max_len", 100, "skip (and count) training pairs longer than this many tokens on either side",
           allows=POSITIVE),
    Option("pad_multiple", 0, "pad each training batch's lengths up to a multiple of N (fewer distinct shapes for "
           "the GPU's kernels and memory cache; 0: 8 on GPUs, 1 elsewhere)", allows=Range(0, 1024)),
    Option("optimizer", "adam", "optimiser", choices=OPTIMIZERS),
    Option("lr", None, "learning rate [default: the optimiser's usual one: "
           f"{', '.join(f'{NAMES[name]} {lr}' for name, lr in DEFAULT_LR.items())}]", type=float,
           allows=ABOVE_ZERO),
    Option("adam_beta1", 0.9, "Adam: decay of the gradients' running mean", allows=Range(0, 1, high_open=True)),
    Option("adam_beta2", 0.999, "Adam: decay of the squared gradients' running mean (Transformers: 0.98)",
           allows=Range(0, 1, high_open=True)),
    Option("weight_decay", 0.0, "L2 weight decay", allows=Range(0)),
    Option("clip_norm", 1.0, "clip the gradient norm to this value (0: no clipping)", allows=Range(0)),
    Option("label_smoothing", 0.0, "label smoothing epsilon", allows=PROBABILITY),
    Option("freeze_embeddings", False, "do not update the word embeddings (kept by a resumed run, as every option)"),
    Option("lr_schedule", "decay-on-worse", "learning-rate schedule: decay-on-worse (multiply by --lr-decay when the "
           "validation metric gets worse) or inverse-sqrt (linear warm-up, then 1/sqrt(step))", choices=tuple(SCHEDULES)),
    Option("warmup_steps", 4000, "inverse-sqrt: updates of linear warm-up to --lr", allows=POSITIVE),
    Option("decay_metric", "bleu", "validation metric for learning-rate decay, early stopping and best.pt",
           choices=(*VALIDATION_METRICS, "ppl")),
    Option("lr_decay", 0.5, "decay-on-worse: multiply the learning rate by this when the validation metric gets "
           "worse (1: never)", allows=Range(0, 1, low_open=True)),
    Option("min_lr", 0.0, "do not decay the learning rate below this", allows=Range(0)),
    Option("patience", 10, "stop after this many validations without a new best (0: never)", allows=COUNT),
    Option("max_epochs", 0, "stop after this many epochs (0: no limit)", allows=COUNT),
    Option("max_steps", 0, "stop after this many updates (0: no limit)", allows=COUNT),
    Option("max_time", 0.0, "stop after this many minutes of wall-clock time, validation included (0: no limit)",
           allows=Range(0)),
    Option("valid_every", 1000, "validate (perplexity and BLEU) and save checkpoints every N updates", allows=POSITIVE),
    Option("save_every", 0, "also save last.pt every N updates between validations (0: only at validation)",
           allows=COUNT),
    Option("keep_checkpoints", 0, "also keep the model of the last N validations as step-STEP.pt, for "
           "'nmtkit average' (0: none)", allows=COUNT),
    Option("valid_beam", 1, "beam size for validation BLEU (1: greedy)", allows=BEAM),
    Option("valid_tokenize", "13a", "sacrebleu's tokenizer of validation BLEU: 13a, intl, zh (Chinese, Japanese: "
           "characters apart), char or none", choices=VALID_TOKENIZERS),
    Option("valid_max_sentences", 0, "translate at most this many validation sentences for BLEU (0: all)", allows=COUNT),
    Option("valid_batch_size", 32, "sentences per batch when translating the validation set", allows=POSITIVE),
    Option("max_len_a", 1.5, "validation output length limit a·|x| + b: a", allows=LENGTH_A),
    Option("max_len_b", 10, "validation output length limit a·|x| + b: b", allows=LENGTH_B),
    Option("log_every", 50, "log training loss, perplexity and speed every N updates", allows=POSITIVE),
    Option("diagnostics", False, "also log, every --log-every updates, the gradient norm of each parameter group and "
                                 "the model's own statistics (multi-source: the attention each encoder receives, its "
                                 "context and state norms) into train.jsonl"),
    Option("seed", 1, "random seed (batch order, initialisation, dropout)", allows=Range(0, 2**32 - 1)),
    Option("device", "auto", "cpu, cuda, cuda:N, mps, or auto (a GPU if there is one)", allows=DEVICE),
    Option("amp", False, "automatic mixed precision (bfloat16 on GPUs that have it, else float16 with loss scaling; "
                         "bfloat16 on CPUs that have it natively, else float32 with a warning)"),
    Option("compile", False, "compile the training forward pass with torch.compile, once for batches of every shape "
                             "(the Transformers; models that loop over steps train uncompiled, with a warning)"),
    Option("profile", "", "profile updates A to B (e.g. 50:60) with torch.profiler: time per update on the host and "
                          "the device, kernel launches, each operation's time into SAVE_DIR/profile.txt, the trace "
                          "into profile.json (those updates run slower)", allows=PROFILE),
    Option("threads", 0, "CPU threads for PyTorch (0: PyTorch's default)", allows=THREADS),
    Option("dist_timeout", 300.0, "seconds to wait for all torchrun processes to join before giving up",
           allows=Range(0, 7 * 24 * 3600, low_open=True)),
]
