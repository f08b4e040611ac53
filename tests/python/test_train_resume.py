"""attn.train on the one training loop (issue #53): a classify run stopped by Ctrl-C keeps its
checkpoint, and resume=True writes the uninterrupted run's file byte for byte."""
import os

import pytest

attn = pytest.importorskip("attn")

NEGATION = os.path.join(os.path.dirname(__file__), "..", "data", "negation_train.tsv")


def test_classify_interrupted_then_resumed_writes_the_uninterrupted_file(tmp_path):
    options = dict(task="classify", epochs=2, batch=32, seed=5, dropout=0.1, checkpoint_steps=10, threads=1,
                   progress=False)
    whole = tmp_path / "whole.safetensors"
    attn.train(NEGATION, output=whole, **options)

    def interrupt_at_step_33(event):  # as Ctrl-C arriving during step 33 (epoch 2's sixth)
        if event["kind"] == "step" and event["epoch"] == 2 and event["step"] == 6:
            raise KeyboardInterrupt

    part = tmp_path / "part.safetensors"
    with pytest.raises(KeyboardInterrupt):
        attn.train(NEGATION, output=part, callback=interrupt_at_step_33, **options)
    assert not part.exists() and os.path.exists(str(part) + ".checkpoint")
    attn.train(NEGATION, output=part, resume=True, **options)
    assert part.read_bytes() == whole.read_bytes()
    assert not os.path.exists(str(part) + ".checkpoint")
