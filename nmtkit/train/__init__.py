"""Training: loss, optimisers and schedules, checkpoints, distributed set-up, the trainer."""
